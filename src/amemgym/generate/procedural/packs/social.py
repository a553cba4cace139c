"""Friends, weekends, volunteering and social energy."""

from __future__ import annotations

from ..pack import Domain, question, var

CIRCLE = var("social_circle", {
    "new_in_town_no_friends": (
        "I moved here recently and don't know a single person yet",
        "I'm new to the area and my phone is silent on weekends",
        "I haven't made any friends since relocating",
    ),
    "few_close_friends": (
        "I have two or three very close friends and that's it",
        "my social circle is tiny but tight-knit",
        "a handful of old friends are all I need",
    ),
    "large_friend_group": (
        "I have a huge network of friends and acquaintances",
        "there's always someone to call; my friend group is big",
        "I know loads of people and get invited everywhere",
    ),
    "mostly_online_friends": (
        "most of my friends are people I game or chat with online",
        "my closest mates live in other countries and we talk over the internet",
        "my social life happens mainly through online communities",
    ),
})

WEEKENDS = var("weekend_social_rhythm", {
    "quiet_nights_in": (
        "my weekends are mostly films, takeaway and staying in",
        "I prefer cosy evenings at home over going out",
        "on Saturday nights it's usually the sofa and a book",
    ),
    "hosting_at_home": (
        "I love having people over for dinner and games",
        "my place is where everyone gathers on weekends",
        "I host something at mine most weekends",
    ),
    "going_out": (
        "I'm out at bars, gigs or clubs most weekends",
        "weekends mean restaurants, concerts and late nights in town",
        "I rarely stay home on a Saturday night",
    ),
    "outdoor_group_activities": (
        "my weekends are spent hiking or cycling with a group",
        "I do outdoor activities with friends every weekend",
        "my Saturdays are for group kayaking, climbing or long bike rides",
    ),
})

VOLUNTEERING = var("volunteering", {
    "no_volunteering": (
        "I don't do any volunteer work at the moment",
        "I haven't found time to give back lately",
        "I'm not involved in any charity or community work",
    ),
    "food_bank_shifts": (
        "I help sort donations at a food bank every week",
        "I volunteer serving meals at a community kitchen",
        "I regularly pack food parcels for families in need",
    ),
    "mentoring_teens": (
        "I mentor a teenager through a youth programme",
        "I volunteer as a homework coach for kids from the estate",
        "I meet a young mentee every fortnight",
    ),
    "animal_shelter_help": (
        "I walk dogs and clean kennels at a rescue shelter",
        "I volunteer with abandoned animals at a sanctuary",
        "I help out with the cats at a local rescue centre",
    ),
})

BATTERY = var("social_battery", {
    "needs_lots_of_alone_time": (
        "socialising wears me out and I need days alone to recover",
        "I'm a strong introvert who recharges in solitude",
        "after a party I need a full day of quiet",
    ),
    "balanced_mix": (
        "I enjoy company but also like my own space in equal measure",
        "I'm somewhere in the middle: some social time, some alone time",
        "a healthy mix of people time and me time keeps me happy",
    ),
    "thrives_on_company": (
        "being around people energises me like nothing else",
        "I get restless when I'm alone for too long",
        "I'm a true extrovert and love a crowd",
    ),
    "socially_anxious": (
        "meeting new people makes my heart race and I overthink everything I say",
        "social situations make me very nervous",
        "I dread small talk and worry people are judging me",
    ),
})

DOMAIN = Domain(
    name="social",
    label="social life and community",
    variables=(CIRCLE, WEEKENDS, VOLUNTEERING, BATTERY),
    questions=(
        question("meeting_new_people", "How can I meet new people?", {
            "social_circle": {
                "new_in_town_no_friends":
                    "Start with newcomer meetups and say yes to every early invitation.",
                "few_close_friends": "Ask your trusted confidants to each bring along a face new to you.",
                "large_friend_group": "Branch out from your wide acquaintance base into an unrelated scene.",
                "mostly_online_friends": "Turn a web connection into a face-to-face coffee in your city.",
            },
            "social_battery": {
                "needs_lots_of_alone_time": "Pick small, structured settings and plan recovery afterwards.",
                "balanced_mix": "Combine one lively event a week with calmer one-to-one plans.",
                "thrives_on_company": "Go for big mixers and team sports where numbers are the point.",
                "socially_anxious": "Choose activity-based groups where the task carries the conversation.",
            },
            "volunteering": {
                "no_volunteering": "A one-off fundraising event is an easy low-commitment way in.",
                "food_bank_shifts": "Get friendly with the other servers during your stints there.",
                "mentoring_teens": "Connect with the other adult guides at scheme socials.",
                "animal_shelter_help": "Chat with the other carers during feeding and grooming rounds.",
            },
        }),
        question("weekend_plans", "What should I do this weekend?", {
            "weekend_social_rhythm": {
                "quiet_nights_in": "Plan a snug evening with a new series and a homemade treat.",
                "hosting_at_home": "Throw a themed potluck and let guests bring a dish each.",
                "going_out": "Check listings for a live show or a newly opened cocktail bar.",
                "outdoor_group_activities": "Organise a joint paddle or a ridge walk if the forecast holds.",
            },
            "social_circle": {
                "new_in_town_no_friends": "Try a local walking tour, which makes chatting easy.",
                "few_close_friends": "Invite your dearest pair for something low-key.",
                "large_friend_group": "Rally a big crowd, since plenty of people are up for it.",
                "mostly_online_friends": "Schedule a multiplayer session or a watch party.",
            },
            "social_battery": {
                "needs_lots_of_alone_time": "Leave Sunday completely free to recharge.",
                "balanced_mix": "Keep one day busy with others and the other restful.",
                "thrives_on_company": "Fill both days, since other people fuel you.",
                "socially_anxious": "Keep the guest list small and familiar.",
            },
        }),
        question("getting_involved_in_community", "How can I get more involved in my community?", {
            "volunteering": {
                "no_volunteering": "Try a single taster session with a nearby cause before committing.",
                "food_bank_shifts": "Step up to coordinating a collection drive for the pantry.",
                "mentoring_teens": "Assist the scheme in recruiting and training more adult role models.",
                "animal_shelter_help":
                    "Offer to run an adoption day or a stall for the four-legged residents.",
            },
            "social_battery": {
                "needs_lots_of_alone_time": "Behind-the-scenes roles suit you better than front-facing ones.",
                "balanced_mix": "A role with some public contact and some solo tasks suits you.",
                "thrives_on_company": "Front-facing roles like greeting or events will energise you.",
                "socially_anxious": "Start with a clear, task-based role alongside one familiar face.",
            },
            "weekend_social_rhythm": {
                "quiet_nights_in": "Pick daytime commitments so after-dark hours stay restful.",
                "hosting_at_home": "Throw a neighbourhood fundraiser supper under your roof.",
                "going_out": "Join event crews for festivals and charity galas.",
                "outdoor_group_activities": "Join litter picks or trail maintenance with your crew.",
            },
        }),
        question("celebrating_my_birthday", "How should I celebrate my birthday this year?", {
            "social_circle": {
                "new_in_town_no_friends":
                    "Use it as an excuse to invite colleagues or neighbours you've met.",
                "few_close_friends": "Book a special dinner with just your dearest ones.",
                "large_friend_group": "Rent a room or a bar corner so the whole crowd can come.",
                "mostly_online_friends": "Host a video party or quiz with your distant pals.",
            },
            "weekend_social_rhythm": {
                "quiet_nights_in": "A relaxed supper in with good food and close pals suits you.",
                "hosting_at_home": "Throw the party under your own roof, as entertaining is your thing.",
                "going_out": "Plan a big celebration out with a reserved table and dancing.",
                "outdoor_group_activities": "Celebrate with a shared adventure and a picnic at the end.",
            },
            "volunteering": {
                "no_volunteering": "Keep the focus simply on enjoying the day with your guests.",
                "food_bank_shifts": "Ask guests to bring a tin for the pantry you support.",
                "mentoring_teens": "Suggest that any gifts go to the teen scheme instead.",
                "animal_shelter_help": "Invite guests to donate to the pet refuge instead of gifts.",
            },
        }),
    ),
    requests=(
        "What do you think I should do?",
        "Can you help me figure out my social life?",
        "Any ideas that would suit me?",
        "How would you approach this?",
        "Could you suggest something?",
        "I'd love some advice here.",
    ),
    event_titles=(
        "a change in social life",
        "a new social chapter",
        "a shift in how I spend time with people",
    ),
)
