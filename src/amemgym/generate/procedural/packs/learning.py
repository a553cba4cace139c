"""Learning and studying."""

from __future__ import annotations

from ..pack import Domain, question, var

SUBJECT = var("learning_subject", {
    "foreign_language": (
        "I'm learning Spanish so I can hold real conversations",
        "I'm studying Japanese vocabulary and grammar",
        "I've taken up Italian and practise verb conjugations",
    ),
    "computer_programming": (
        "I'm teaching myself to code in Python",
        "I'm learning software development, working through JavaScript exercises",
        "I'm studying programming so I can build my own apps",
    ),
    "professional_certification": (
        "I'm studying for an accounting qualification",
        "I'm working toward a project management certificate",
        "I'm preparing for a professional licensing credential in my field",
    ),
    "creative_writing": (
        "I'm learning to write short stories and have a novel in mind",
        "I'm studying fiction craft and drafting chapters",
        "I've started a creative writing course to improve my storytelling",
    ),
})

FORMAT = var("learning_format", {
    "self_paced_apps": (
        "I learn through phone apps in little bites whenever I can",
        "my lessons come from self-paced apps and videos",
        "I use an app with daily streaks and short exercises",
    ),
    "evening_classes": (
        "I attend an in-person class at a local college twice a week",
        "I go to a weekly course with a teacher and classmates",
        "I sit in a classroom with other adult learners after work",
    ),
    "online_degree_program": (
        "I'm enrolled in a formal online degree with graded assignments",
        "I'm doing a university programme remotely with lectures and coursework",
        "I study through an accredited distance-learning course with tutors",
    ),
    "private_tutor": (
        "I have one-on-one sessions with a private tutor",
        "a personal teacher works with me individually every week",
        "I pay a tutor who tailors each lesson to me",
    ),
})

WINDOW = var("study_window", {
    "early_mornings": (
        "I study before anyone else is up, around six",
        "my learning happens at dawn with a coffee",
        "the first hour after I wake up is my study time",
    ),
    "lunch_breaks": (
        "I squeeze in study during my midday break",
        "I learn for half an hour while eating lunch",
        "my study slot is the break in the middle of my day",
    ),
    "late_evenings": (
        "I study after ten at night when my day is finally over",
        "my learning time starts when everything else is done, late at night",
        "I hit the books just before bed",
    ),
    "weekend_blocks": (
        "I do long study sessions on Saturdays and Sundays",
        "my learning happens in big chunks over the weekend",
        "I set aside whole weekend afternoons for studying",
    ),
})

PROGRESS = var("learning_progress", {
    "complete_beginner": (
        "I'm right at the start and know almost nothing yet",
        "I've only just begun and everything is unfamiliar",
        "I'm at square one with this",
    ),
    "stuck_on_a_plateau": (
        "I've been stuck at the same level for months and can't seem to improve",
        "my progress has stalled completely",
        "I feel like I've hit a wall with it",
    ),
    "making_fast_progress": (
        "I'm improving quickly and every week I notice a jump",
        "things are clicking and I'm advancing fast",
        "I'm moving through the material at a great pace",
    ),
    "nearly_finished": (
        "I'm in the final stretch with only a little left to cover",
        "I'm almost done with the whole course",
        "just a few units remain before I complete it",
    ),
})

MOTIVATION = var("motivation_driver", {
    "career_advancement": (
        "I'm doing this to get a better job",
        "it's all about moving up professionally",
        "I want this on my CV to open up better roles",
    ),
    "exam_deadline": (
        "I have a test date in a few weeks that I must pass",
        "there's an exam coming up soon and I'm nervous",
        "I'm cramming because the assessment is booked",
    ),
    "personal_curiosity": (
        "I'm learning purely because I find it fascinating",
        "nobody is making me do this; I'm just curious",
        "it's a passion project driven by interest",
    ),
    "keeping_mind_sharp": (
        "I want to keep my brain active as I get older",
        "I'm studying to stay mentally sharp",
        "learning is my way to exercise my mind and ward off decline",
    ),
})

DOMAIN = Domain(
    name="learning",
    label="learning and studies",
    variables=(SUBJECT, FORMAT, WINDOW, PROGRESS, MOTIVATION),
    questions=(
        question("structuring_study_time", "How should I structure my study time?", {
            "learning_format": {
                "self_paced_apps": "Set a fixed target each day so the tiny drills add up.",
                "evening_classes": "Review your notes the day after each meeting while they're fresh.",
                "online_degree_program": "Map every submission date onto a calendar at term start.",
                "private_tutor": "Prepare questions before each meeting to use the paid hour well.",
            },
            "study_window": {
                "early_mornings": "Tackle the hardest material first thing, before the day intrudes.",
                "lunch_breaks": "Use short review cards that fit neatly into a brief noon gap.",
                "late_evenings": "Keep that closing stint light, like revision, since focus fades by then.",
                "weekend_blocks": "Split long sittings into ninety-minute rounds with real pauses.",
            },
            "learning_progress": {
                "complete_beginner": "Prioritise fundamentals and accept slow early going.",
                "stuck_on_a_plateau": "Change your methods, since more of the same won't help.",
                "making_fast_progress": "Ride the momentum but schedule regular consolidation.",
                "nearly_finished": "Shift to revision and tying up the last loose ends.",
            },
        }),
        question("learning_resources", "What resources should I use to keep learning?", {
            "learning_subject": {
                "foreign_language": "Add native-speaker podcasts and a tandem exchange partner.",
                "computer_programming":
                    "Add small homemade tools and read well-written open-source repositories.",
                "professional_certification": "Add official past papers and a recognised exam-prep guide.",
                "creative_writing": "Add a critique circle and read widely in your chosen genre.",
            },
            "learning_progress": {
                "complete_beginner": "Pick resources labelled for absolute newcomers.",
                "stuck_on_a_plateau": "Seek harder, less familiar sources that challenge you.",
                "making_fast_progress": "Move up to intermediate texts a little early.",
                "nearly_finished": "Focus on summary sheets rather than fresh content.",
            },
            "learning_format": {
                "self_paced_apps": "Pair the tiny drills with one longer textbook.",
                "evening_classes": "Ask the instructor for a recommended reading list.",
                "online_degree_program": "Use the institution's digital library access fully.",
                "private_tutor": "Ask your mentor to curate material for your gaps.",
            },
        }),
        question("staying_motivated_with_studies", "How do I stay motivated with my studies?", {
            "motivation_driver": {
                "career_advancement": "Tie each milestone to a concrete opening you'd like to land.",
                "exam_deadline": "Count down to the big day with mock papers along the way.",
                "personal_curiosity": "Follow tangents that excite you, since joy drives you.",
                "keeping_mind_sharp": "Treat it like a daily workout for the head and track the streak.",
            },
            "learning_progress": {
                "complete_beginner": "Celebrate tiny wins, because early gains are visible.",
                "stuck_on_a_plateau": "Measure gains differently, since improvement looks invisible.",
                "making_fast_progress": "Set a bold, ambitious goal to keep the energy up.",
                "nearly_finished": "Picture finishing, as the end is within reach.",
            },
            "study_window": {
                "early_mornings": "Lay out your materials in advance so beginning is easy.",
                "lunch_breaks": "Protect that noon window from meetings and errands.",
                "late_evenings": "Make the bedtime stint cosy so it feels like a treat.",
                "weekend_blocks": "Plan a reward at the end of each long sitting.",
            },
        }),
        question("practising_what_i_learn", "What's a good way to practise what I'm learning?", {
            "learning_subject": {
                "foreign_language": "Speak aloud daily, even to yourself, and label objects at home.",
                "computer_programming": "Rebuild a small tool you use so every concept gets applied.",
                "professional_certification": "Answer timed questions under exam conditions regularly.",
                "creative_writing": "Pen a brief scene daily and revise an older one each week.",
            },
            "motivation_driver": {
                "career_advancement": "Apply it visibly in tasks your employer will notice.",
                "exam_deadline": "Mirror the format of the real paper closely.",
                "personal_curiosity": "Pick practice topics simply for the fun of it.",
                "keeping_mind_sharp": "Vary the drills so your thinking keeps adapting.",
            },
            "study_window": {
                "early_mornings": "A quick drill with breakfast starts the day right.",
                "lunch_breaks": "A quick drill while you eat keeps it fresh.",
                "late_evenings": "A light recap before sleep helps memory consolidate.",
                "weekend_blocks": "Use the long sittings for extended practice projects.",
            },
        }),
    ),
    requests=(
        "How should I go about it from here?",
        "Can you help me plan my studying?",
        "What would you suggest to keep it going well?",
        "Any tips for making real progress?",
        "Could you help me organise my learning?",
        "What's the smartest way to approach this?",
    ),
    event_titles=(
        "a change in study plans",
        "a new stage of learning",
        "a shift in how I study",
    ),
)
