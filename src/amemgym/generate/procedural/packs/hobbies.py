"""Creative hobbies and crafts."""

from __future__ import annotations

from ..pack import Domain, question, var

CRAFT = var("main_creative_hobby", {
    "sketching_and_painting": (
        "my evenings go to watercolours and pencil drawings",
        "I fill sketchbooks and have started working with acrylics",
        "I'm happiest with a brush in my hand, painting landscapes",
    ),
    "playing_guitar": (
        "I practise chords and riffs on my acoustic six-string every night",
        "my free time is spent learning songs on the guitar",
        "I've got calluses on my fingertips from all the strumming",
    ),
    "woodworking": (
        "I build small furniture and boxes out of timber",
        "there's sawdust everywhere because I'm making a bookshelf with hand tools",
        "I turn bowls and cut joints in hardwood for fun",
    ),
    "knitting_and_sewing": (
        "I knit jumpers and sew my own clothes",
        "my needles and yarn come everywhere with me",
        "I'm stitching a quilt and knitting socks at the same time",
    ),
})

WORKSPACE = var("hobby_workspace", {
    "corner_of_living_room": (
        "my hobby lives on a fold-out table in the corner of the lounge",
        "I work on my projects on the sofa and pack everything away after",
        "a small corner of the sitting room is my only creative spot",
    ),
    "dedicated_spare_room": (
        "I've turned the spare bedroom into a proper studio just for my craft",
        "I have a whole room to myself for my projects, with shelves and good light",
        "a dedicated hobby room means I can leave everything set out",
    ),
    "shared_community_workshop": (
        "I rent bench time at a community makerspace across town",
        "my projects happen at a shared workshop with other members",
        "I go to a cooperative studio where we split the space and tools",
    ),
    "rented_garage_unit": (
        "I rent a lock-up garage a few streets away for my hobby",
        "my projects live in a rented storage unit with a workbench",
        "I pay monthly for a small garage bay where I do my craft",
    ),
})

LEVEL = var("hobby_skill_level", {
    "just_started": (
        "I picked this up only a few weeks ago and I'm a total novice",
        "I'm brand new to it and still learning the very basics",
        "I only began recently and my first attempts are rough",
    ),
    "improving_hobbyist": (
        "I've been at it for a couple of years and I'm getting noticeably better",
        "I'm past the basics and steadily improving",
        "I can handle intermediate projects now, though I still make mistakes",
    ),
    "advanced_hobbyist": (
        "after a decade of practice I can tackle almost any project",
        "people assume I'm a professional when they see my work",
        "I'm very experienced and only take on complex challenges",
    ),
    "sells_or_exhibits_work": (
        "I sell my pieces at craft fairs and online",
        "a local gallery has started showing my work",
        "commissions from customers keep me busy on weekends",
    ),
})

SOCIAL = var("hobby_social_setting", {
    "on_my_own": (
        "I do my hobby entirely by myself and rarely show anyone",
        "it's a private, solitary thing for me",
        "nobody else is involved; it's my quiet time alone",
    ),
    "online_community": (
        "I post progress in an online forum and get feedback there",
        "my hobby friends are all in a Discord server",
        "I share my projects with an internet group of enthusiasts",
    ),
    "local_club": (
        "I'm a member of a local club that meets every Thursday",
        "I go to a neighbourhood circle of fellow hobbyists",
        "a town society of people who share my hobby is my main social outlet",
    ),
    "teaching_a_class": (
        "I teach beginners in an evening course at the community centre",
        "I run workshops for newcomers twice a month",
        "I've started instructing a small class of learners",
    ),
})

DOMAIN = Domain(
    name="hobbies",
    label="creative hobbies",
    variables=(CRAFT, WORKSPACE, LEVEL, SOCIAL),
    questions=(
        question("next_hobby_project", "What project should I take on next in my hobby?", {
            "main_creative_hobby": {
                "sketching_and_painting": "Try a series of small studies of one scene in different light.",
                "playing_guitar": "Master a complete piece with a fingerpicking pattern and a solo.",
                "woodworking": "Make a dovetailed keepsake chest or a three-legged stool.",
                "knitting_and_sewing": "Make a fitted garment from a pattern you alter to your size.",
            },
            "hobby_skill_level": {
                "just_started": "Keep it small enough to complete in a few sittings for a quick win.",
                "improving_hobbyist": "Pick something one notch harder than your last result.",
                "advanced_hobbyist": "Set yourself a signature creation that stretches every technique.",
                "sells_or_exhibits_work": "Develop a cohesive collection that buyers recognise as yours.",
            },
            "hobby_workspace": {
                "corner_of_living_room": "Choose something that tidies away neatly between sittings.",
                "dedicated_spare_room": "A lengthy build can stay out for weeks without bothering anyone.",
                "shared_community_workshop": "Use the big machinery there that you couldn't own privately.",
                "rented_garage_unit": "Plan around the winter, as glue and finishes misbehave when chilly.",
            },
        }),
        question("supplies_worth_buying", "What supplies or tools should I invest in?", {
            "main_creative_hobby": {
                "sketching_and_painting":
                    "Artist-grade pigments and heavy cotton paper make the most difference.",
                "playing_guitar": "A setup by a luthier and a good clip-on tuner improve playability most.",
                "woodworking": "Sharp chisels, a honing guide and good clamps are worth the money.",
                "knitting_and_sewing": "Quality shears, good fibre and a walking-foot machine pay off.",
            },
            "hobby_workspace": {
                "corner_of_living_room": "Favor stackable lidded crates that hide clutter out of sight.",
                "dedicated_spare_room": "Invest in daylight lamps and wall-mounted racks there.",
                "shared_community_workshop": "Buy portable kit you can carry back and forth each visit.",
                "rented_garage_unit": "A small dehumidifier protects materials from damp in there.",
            },
            "hobby_social_setting": {
                "on_my_own": "Buy purely for your own taste, as no one else will borrow it.",
                "online_community": "Check reviews from your web peers before spending.",
                "local_club": "Ask the regulars whether they'd lend kit before you commit.",
                "teaching_a_class": "Get spare starter sets you can hand out to pupils.",
            },
        }),
        question("improving_faster", "How can I get better at my hobby faster?", {
            "hobby_skill_level": {
                "just_started": "Follow a structured foundation course rather than random videos.",
                "improving_hobbyist": "Copy works you admire to understand the choices behind them.",
                "advanced_hobbyist": "Seek a master for critique, since self-study has diminishing returns.",
                "sells_or_exhibits_work":
                    "Balance paid jobs with personal experiments so growth doesn't stall.",
            },
            "hobby_social_setting": {
                "on_my_own": "Keep a dated journal of results so you can see the change.",
                "online_community": "Upload work often and ask for specific, honest critique.",
                "local_club": "Pair up with a stronger regular at the meetups.",
                "teaching_a_class": "Explaining it to pupils sharpens your own grasp.",
            },
            "main_creative_hobby": {
                "sketching_and_painting": "Do daily two-minute gesture studies.",
                "playing_guitar": "Run scales slowly with a metronome daily.",
                "woodworking": "Drill sawing to a line and honing edges.",
                "knitting_and_sewing": "Drill tension swatches and seam finishes.",
            },
        }),
        question("sharing_creations", "How should I share what I make?", {
            "hobby_social_setting": {
                "on_my_own": "Begin by gifting a few things to those dearest to you.",
                "online_community": "Write a short build log with photos for your web followers.",
                "local_club": "Bring finished items along for the regulars to see at meetups.",
                "teaching_a_class": "Use your own output as demonstration examples for pupils.",
            },
            "hobby_skill_level": {
                "just_started": "Don't worry about polish; sharing early keeps you motivated.",
                "improving_hobbyist": "Enter a small amateur contest for honest feedback.",
                "advanced_hobbyist": "Consider a solo display or a detailed tutorial series.",
                "sells_or_exhibits_work": "Keep a consistent portfolio and price list up to date.",
            },
            "hobby_workspace": {
                "corner_of_living_room": "Photograph items against a plain wall, since the area is tight.",
                "dedicated_spare_room": "Set up a permanent photo backdrop against one free wall.",
                "shared_community_workshop": "Ask the makers' venue to feature you in its newsletter.",
                "rented_garage_unit": "Shoot photos outdoors in soft daylight near the door.",
            },
        }),
    ),
    requests=(
        "What would you suggest?",
        "Can you help me decide what to do next with it?",
        "Any ideas for making the most of it?",
        "How would you approach this if you were me?",
        "Could you point me in the right direction?",
        "I'd love some advice on where to go from here.",
    ),
    event_titles=(
        "a change in the creative routine",
        "a new phase for my hobby",
        "a shake-up of hobby time",
    ),
)
