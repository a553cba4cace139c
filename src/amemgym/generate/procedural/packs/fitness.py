"""Exercise and training."""

from __future__ import annotations

from ..pack import Domain, question, var

GOAL = var("fitness_goal", {
    "lose_body_fat": (
        "I'm trying to drop the extra weight I've put on around my middle",
        "my main aim is to get leaner and fit into my old jeans again",
        "the scale is what I'm watching: I want about eight kilos gone",
    ),
    "build_muscle": (
        "I want to get visibly stronger and put on some muscle",
        "my aim is bigger arms and being able to lift heavier things",
        "I'm chasing strength, with more on the bar every month",
    ),
    "run_a_long_race": (
        "I've signed up for a marathon and want to finish it",
        "there's a half-marathon on my calendar and I need the legs for it",
        "I'm aiming to complete a long-distance run in the autumn",
    ),
    "improve_flexibility": (
        "I'd love to touch my toes again and bend without effort",
        "my goal is to loosen up, since I feel tight and creaky all the time",
        "what I want most is better range of motion and a more supple body",
    ),
})

VENUE = var("workout_venue", {
    "home_no_equipment": (
        "I exercise in my living room with nothing but a mat and my own body weight",
        "I don't own any fitness gear, so it's floor exercises at home",
        "my workouts happen at home with zero equipment, just some floor space",
    ),
    "home_with_weights": (
        "I've set up a rack, a bench and some dumbbells in my garage",
        "there's a corner at home with adjustable dumbbells and a pull-up bar",
        "I train at home with a barbell and plates I bought second-hand",
    ),
    "commercial_gym": (
        "I pay for a membership at a big chain gym with all the machines",
        "my training happens at a busy fitness centre with rows of machines and free weights",
        "I go to a full-service gym downtown with a pool and a weights floor",
    ),
    "outdoor_parks_and_trails": (
        "I do all my exercise outside in the park and on forest paths",
        "my training ground is the riverside trail and the outdoor pull-up bars",
        "I work out in the open whatever the weather, mostly on hills and park lawns",
    ),
})

WEEKLY_TIME = var("weekly_training_time", {
    "under_one_hour": (
        "I can only fit in one short session of maybe forty minutes a week",
        "exercise gets less than an hour of my week, all told",
        "realistically I manage a single quick workout each week",
    ),
    "two_to_three_hours": (
        "I can train about two or three times a week for an hour",
        "my week has room for two to three hours of exercise",
        "I get in around three sessions of roughly fifty minutes each week",
    ),
    "four_to_six_hours": (
        "I train most weekdays for about an hour",
        "exercise takes up about five hours of my week",
        "I get in four or five solid hour-long sessions a week",
    ),
    "over_eight_hours": (
        "I train almost twice a day, well over eight hours a week",
        "exercise is a huge part of my week, ten hours or more",
        "I spend more than an hour every single day training, plus long weekend sessions",
    ),
})

INJURY = var("current_injury", {
    "no_injury": (
        "my body feels fine, with no aches or injuries at all",
        "I'm completely free of pain right now",
        "nothing hurts; I've been injury-free for a long while",
    ),
    "sore_lower_back": (
        "my lower back aches after sitting and flares up when I bend",
        "I have a grumbling pain at the base of my spine",
        "my lumbar area has been sore for weeks and lifting things makes it worse",
    ),
    "healing_sprained_ankle": (
        "I rolled my ankle badly and it's still swollen and weak",
        "my ankle is strapped up after a sprain and I'm limping a bit",
        "I twisted my ankle on a kerb and it's still healing",
    ),
    "stiff_shoulder": (
        "my right shoulder is painful whenever I raise my arm overhead",
        "I can't reach up to a high shelf without a twinge in my shoulder",
        "my shoulder joint has been locked up and sore for a while",
    ),
})

COMPANY = var("training_company", {
    "trains_alone": (
        "I always exercise by myself with headphones in",
        "I prefer to work out solo, no partners or classes",
        "nobody trains with me; it's just me and my playlist",
    ),
    "with_a_friend": (
        "a close friend and I meet up to exercise together",
        "I have a workout buddy who keeps me honest",
        "my neighbour and I do our sessions side by side",
    ),
    "group_classes": (
        "I go to group classes where an instructor leads a room full of people",
        "I'm part of a bootcamp class that meets a few times a week",
        "I love the energy of a packed spin or circuit class",
    ),
    "personal_trainer": (
        "I work one-on-one with a coach who plans every session",
        "I pay for a personal coach who watches my form",
        "a trainer designs my program and meets me each week",
    ),
})

DOMAIN = Domain(
    name="fitness",
    label="fitness and exercise",
    variables=(GOAL, VENUE, WEEKLY_TIME, INJURY, COMPANY),
    questions=(
        question("monthly_workout_structure", "How should I structure my workouts this month?", {
            "fitness_goal": {
                "lose_body_fat":
                    "Center the plan on steady cardio plus total-conditioning circuits that burn energy.",
                "build_muscle":
                    "Center the plan on progressive overload with compound barbell moves each cycle.",
                "run_a_long_race": "Center the plan on an easy mileage base with one extended outing weekly.",
                "improve_flexibility":
                    "Center the plan on yoga flows and slow mobility drills for each joint.",
            },
            "weekly_training_time": {
                "under_one_hour": "Squeeze everything into one compact full-body circuit.",
                "two_to_three_hours": "Split it into a couple of moderate outings with rest between.",
                "four_to_six_hours": "Spread it over most days, alternating hard and easy efforts.",
                "over_eight_hours": "Use a periodized schedule with doubles and a planned deload.",
            },
            "current_injury": {
                "no_injury": "No restrictions apply, so include jumps and sprints freely.",
                "sore_lower_back": "Avoid heavy deadlifts and crunches, and favor core bracing.",
                "healing_sprained_ankle": "Skip running and jumping for now, and add balance drills.",
                "stiff_shoulder": "Leave out pressing above your head and add rotator cuff band work.",
            },
        }),
        question("fitness_gear_worth_buying", "What fitness gear is worth getting?", {
            "workout_venue": {
                "home_no_equipment": "Resistance bands and a door anchor add a great deal for little cost.",
                "home_with_weights": "Fractional discs and a sturdy squat stand would round out your setup.",
                "commercial_gym": "Just bring lifting gloves and a lock, since the facility has the rest.",
                "outdoor_parks_and_trails":
                    "Weatherproof layers and grippy off-road shoes matter most of all.",
            },
            "fitness_goal": {
                "lose_body_fat": "A heart-rate strap helps you see how hard each cardio bout is.",
                "build_muscle": "A training belt and a logbook help you track growing loads over time.",
                "run_a_long_race": "Cushioned road shoes and a GPS tracker earn their cost over the miles.",
                "improve_flexibility": "Foam rollers and yoga blocks help you ease deeper into each stretch.",
            },
            "training_company": {
                "trains_alone": "A timer app with audio cues makes each effort lively with no company.",
                "with_a_friend": "A shared calendar and matching routines keep the two of you in sync.",
                "group_classes": "Ask whoever runs things which items attendees should bring along.",
                "personal_trainer": "Check with the professional guiding you before buying anything big.",
            },
        }),
        question("staying_consistent", "How can I stay consistent with exercise?", {
            "training_company": {
                "trains_alone": "Track streaks in an app, because no one else notices a skipped day.",
                "with_a_friend": "Lean on your partner in this and agree cancelling needs a good reason.",
                "group_classes": "Prebook every slot in advance, because a reserved spot is hard to drop.",
                "personal_trainer": "Use the paid appointments as anchors and log homework between them.",
            },
            "weekly_training_time": {
                "under_one_hour": "Guard that lone slot like a meeting you cannot move.",
                "two_to_three_hours": "Fix regular slots on set days so they turn into a habit.",
                "four_to_six_hours": "Plan lighter days between tough ones so it stays sustainable.",
                "over_eight_hours": "Schedule deload phases ahead so the heavy load can't burn you out.",
            },
            "workout_venue": {
                "home_no_equipment": "Keep a clear spot ready so starting takes no preparation at all.",
                "home_with_weights": "Leave the next movement ready so you can begin the moment you walk in.",
                "commercial_gym": "Go at off-peak times so crowds and queues never become an excuse.",
                "outdoor_parks_and_trails":
                    "Have a rain jacket by the door so a grey sky can't talk you out of it.",
            },
        }),
        question("warm_up_and_cool_down", "What should my warm-up and cool-down look like?", {
            "current_injury": {
                "no_injury": "A general five-minute pulse raiser with dynamic swings is enough.",
                "sore_lower_back": "Add cat-cow movements and glute bridges to wake up hips and core.",
                "healing_sprained_ankle":
                    "Add alphabet tracing with the foot and wobble-board balance first.",
                "stiff_shoulder": "Add wall slides and band pull-aparts to loosen the rotator cuff.",
            },
            "fitness_goal": {
                "lose_body_fat": "End with a brisk stroll to bring the heart rate down gradually.",
                "build_muscle": "Ramp up with lighter sets of the first movement before the real work.",
                "run_a_long_race": "End with easy jogging and calf stretches to protect shins and feet.",
                "improve_flexibility": "Close with deep held stretches, because warm tissue lengthens best.",
            },
            "workout_venue": {
                "home_no_equipment": "Bodyweight lunges and arm circles are all the preparation needed.",
                "home_with_weights": "Do a few practice reps with no load before anything heavier.",
                "commercial_gym": "Hop on a rower or stationary bike briefly before the main session.",
                "outdoor_parks_and_trails": "Dress in layers you can shed once you heat up under the sky.",
            },
        }),
    ),
    requests=(
        "Can you help me plan my training around that?",
        "What would you suggest for my workouts?",
        "How should I adjust my exercise routine?",
        "Any tips for getting the most out of my training?",
        "Could you sketch out a plan that fits?",
        "What would a sensible approach look like for me?",
    ),
    event_titles=(
        "a change in the exercise routine",
        "a new phase of training",
        "a shift in how I keep fit",
    ),
)
