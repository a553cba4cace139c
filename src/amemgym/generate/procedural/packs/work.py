"""Work and career (only for users who have a job)."""

from __future__ import annotations

from ..pack import Domain, question, var

LOCATION = var("work_location", {
    "fully_remote": (
        "I work entirely from home and haven't seen an office in ages",
        "my job is completely remote; my colleagues are faces on a screen",
        "there's no office for me to go to, everything happens from my desk at home",
    ),
    "hybrid_two_office_days": (
        "I'm in the office Tuesdays and Thursdays and at home the rest of the week",
        "my team splits the week: two days at headquarters, three at home",
        "I commute in twice a week and work from my own table otherwise",
    ),
    "fully_on_site": (
        "I have to be physically at my workplace every single day",
        "my job can't be done from home, so I'm on site five days a week",
        "every workday I clock in at the same building and stay there all day",
    ),
    "mostly_on_the_road": (
        "I spend most weeks driving between client sites and sleeping in hotels",
        "my job keeps me visiting customers in different cities most of the week",
        "I'm away on work trips far more often than I'm at my own desk",
    ),
})

HOURS = var("work_hours_pattern", {
    "regular_daytime": (
        "my hours are a normal nine-to-five, Monday to Friday",
        "I start around nine and finish around five on weekdays",
        "my working day runs during ordinary office hours",
    ),
    "early_morning_starts": (
        "my shift starts at five in the morning, so I'm up before dawn",
        "I clock in at six a.m. and I'm done by early afternoon",
        "my alarm goes off at four-thirty because work begins so early",
    ),
    "night_shifts": (
        "I work nights, roughly ten in the evening until six in the morning",
        "my shifts run through the night and I sleep during the day",
        "I'm on the overnight rota, so my 'morning' is late afternoon",
    ),
    "rotating_shifts": (
        "my schedule rotates between day, evening and night shifts every week",
        "my hours change constantly because the rota cycles through all three shifts",
        "one week I'm on earlies, the next on lates, then nights",
    ),
})

WORKLOAD = var("workload", {
    "light_and_quiet": (
        "work is pretty quiet right now and I sometimes run out of things to do",
        "my workload is light, with slow afternoons and not much on",
        "things at my job are calm, hardly any pressure at the moment",
    ),
    "steady_and_manageable": (
        "my workload is busy but under control, nothing I can't handle",
        "work keeps me occupied at a comfortable, predictable pace",
        "I have a normal amount on my plate and I'm finishing things on time",
    ),
    "heavy_deadline_crunch": (
        "we're in a crunch before a big launch and I'm working late most days",
        "a huge deadline is coming and my to-do list is enormous",
        "it's crunch season at work, with overtime almost every evening",
    ),
    "overloaded_and_burning_out": (
        "I'm completely swamped and starting to dread opening my laptop",
        "the workload has become unsustainable and I feel exhausted all the time",
        "I'm doing the job of two people and I'm close to breaking point",
    ),
})

ROLE = var("role_level", {
    "individual_contributor": (
        "I'm a regular team member with nobody reporting to me",
        "I do hands-on work and don't manage anyone",
        "I'm one of the specialists on the team, with no people to look after",
    ),
    "new_team_lead": (
        "I was recently made lead of a small team of four",
        "I've just started supervising a handful of former peers",
        "I'm newly in charge of a few people for the first time",
    ),
    "seasoned_manager": (
        "I manage several managers and have done so for years",
        "I run a department of about forty people",
        "I've led large teams for a long time and sit in the leadership meetings",
    ),
    "solo_freelancer": (
        "I work for myself, taking contracts from different clients",
        "I'm self-employed and find my own projects",
        "I'm an independent contractor with no boss and no team",
    ),
})

CAREER = var("career_direction", {
    "staying_put": (
        "I'm happy where I am and not looking for anything new career-wise",
        "I want to stay in my current role for the foreseeable future",
        "climbing higher doesn't interest me; I like my job as it is",
    ),
    "aiming_for_promotion": (
        "I'm going for the next step up at my company this year",
        "I've told my boss I want a promotion and I'm working toward it",
        "I'm hoping to move up a grade in the next review cycle",
    ),
    "changing_fields": (
        "I'm planning to leave my industry for something completely different",
        "I'm retraining because I want out of this line of work",
        "I'm exploring a switch into a whole new profession",
    ),
    "starting_own_business": (
        "I'm preparing to launch my own company on the side",
        "I'm drafting a plan to go independent with my own business",
        "I want to open a small shop of my own within the year",
    ),
})

DOMAIN = Domain(
    name="work",
    label="work and career",
    variables=(LOCATION, HOURS, WORKLOAD, ROLE, CAREER),
    needs_job=True,
    questions=(
        question("organising_a_workday", "How should I organise a typical workday?", {
            "work_location": {
                "fully_remote":
                    "Mark start and finish with a short walk to keep duties apart from private life.",
                "hybrid_two_office_days":
                    "Save meetings for in-person days and deep focus for the remainder.",
                "fully_on_site": "Use the journey in as planning time and take your breaks off the premises.",
                "mostly_on_the_road": "Batch admin for transit days and keep a packed kit so nothing slips.",
            },
            "work_hours_pattern": {
                "regular_daytime": "Protect the forenoon for your hardest task and taper off after lunch.",
                "early_morning_starts":
                    "Tackle demanding tasks first while you're fresh, and wind down by noon.",
                "night_shifts": "Put the hardest tasks before the 3 a.m. slump, and eat at fixed times.",
                "rotating_shifts":
                    "Re-plan every week around the changing timetable, keeping one anchor habit.",
            },
            "workload": {
                "light_and_quiet":
                    "Use spare capacity for a skill-building project your manager will notice.",
                "steady_and_manageable":
                    "Keep your current rhythm and review priorities briefly each Friday.",
                "heavy_deadline_crunch":
                    "Block distraction-free stretches and push non-urgent items past the due date.",
                "overloaded_and_burning_out":
                    "Note what can be dropped or handed off and tell your boss it is too much.",
            },
        }),
        question("career_focus", "What should I focus on for my career over the next few months?", {
            "career_direction": {
                "staying_put": "Deepen mastery in your present position rather than chasing titles.",
                "aiming_for_promotion": "Document your wins and ask for stretch work that shows readiness.",
                "changing_fields":
                    "Take a short course and talk to people already employed in the target area.",
                "starting_own_business":
                    "Validate the idea with a few paying customers before quitting your post.",
            },
            "role_level": {
                "individual_contributor": "Build a reputation for deep expertise within your craft.",
                "new_team_lead": "Learn to delegate and hold frequent one-to-ones with your staff.",
                "seasoned_manager": "Focus on developing your senior staff into future leaders.",
                "solo_freelancer": "Strengthen your sales pipeline so income never hangs on one account.",
            },
            "workload": {
                "light_and_quiet": "The slack period is an ideal window for bigger moves.",
                "steady_and_manageable": "Your even rhythm leaves room for modest extra effort.",
                "heavy_deadline_crunch": "Wait until the current push ends before adding anything.",
                "overloaded_and_burning_out": "Recovery comes first; major career moves can wait a bit.",
            },
        }),
        question("keeping_work_from_wearing_me_down", "How can I keep work from wearing me down?", {
            "work_hours_pattern": {
                "regular_daytime": "Go fully offline after dinner and silence alerts until breakfast.",
                "early_morning_starts": "Get to bed by 9 p.m. and allow a brief nap soon after lunch.",
                "night_shifts": "Use blackout curtains and keep your rest window fixed on days off.",
                "rotating_shifts": "Move bedtime gradually before each changeover and use bright light.",
            },
            "workload": {
                "light_and_quiet": "Watch that boredom doesn't drain you as much as stress would.",
                "steady_and_manageable": "A short weekly review is enough to keep things healthy.",
                "heavy_deadline_crunch": "Plan a proper rest block straight after the current push.",
                "overloaded_and_burning_out": "See a doctor or counselor if the fatigue lingers for weeks.",
            },
            "role_level": {
                "individual_contributor": "Say no to side requests that pull you off your core tasks.",
                "new_team_lead": "Resist doing your old job on top of the new responsibilities.",
                "seasoned_manager": "Delegate meeting load and guard two focus blocks per week.",
                "solo_freelancer": "Set fixed office hours so customers can't claim every evening.",
            },
        }),
        question("communication_with_colleagues", "How should I handle communication with colleagues?", {
            "role_level": {
                "individual_contributor": "Share progress updates upward before your manager has to ask.",
                "new_team_lead": "Hold a short weekly sync and set clear expectations early on.",
                "seasoned_manager": "Cascade key messages through your senior staff each month.",
                "solo_freelancer": "Put scope and deadlines in writing with every customer.",
            },
            "work_location": {
                "fully_remote": "Default to written channels and turn the camera on for key calls.",
                "hybrid_two_office_days": "Hold the in-person conversations for when you're all together.",
                "fully_on_site": "Walk over for quick questions instead of sending messages.",
                "mostly_on_the_road": "Send a brief status note at the end of each stop.",
            },
            "career_direction": {
                "staying_put": "Invest in good relationships that make daily life at work pleasant.",
                "aiming_for_promotion": "Make sure senior people see your contributions in meetings.",
                "changing_fields": "Ask colleagues for introductions to contacts in the area you're eyeing.",
                "starting_own_business": "Keep quiet about the venture until your contract terms are clear.",
            },
        }),
    ),
    requests=(
        "Can you help me think this through?",
        "How should I handle work from here?",
        "What would you suggest I do about my job situation?",
        "Any advice on making this work for me?",
        "Could you help me plan the next few weeks at work?",
        "What should I keep in mind at work?",
    ),
    event_titles=(
        "a shake-up at work",
        "a new arrangement at the job",
        "a turning point in working life",
    ),
)
