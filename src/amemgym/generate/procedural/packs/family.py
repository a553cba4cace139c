"""Family, caregiving and pets."""

from __future__ import annotations

from ..pack import Domain, question, var

CAREGIVING = var("caregiving_duty", {
    "no_caregiving": (
        "nobody in my family depends on me for day-to-day care",
        "my relatives are all independent and healthy, so I'm not looking after anyone",
        "I have no one to care for at the moment; everyone manages on their own",
    ),
    "weekly_help_for_parent": (
        "I go over to my mother's once a week to help with shopping and paperwork",
        "every Saturday I spend the afternoon sorting things out for my elderly dad",
        "my mum needs a hand each week with errands, so I pop round regularly",
    ),
    "parent_living_with_me": (
        "my father has moved in with me since he can't live alone anymore",
        "my elderly mother lives under my roof and I help her daily",
        "my dad stays in my spare room full time and needs looking after",
    ),
    "long_distance_caregiving": (
        "my mother lives in another country and I organise her care by phone",
        "my dad is hundreds of kilometres away, so I coordinate his carers remotely",
        "I manage my parent's appointments from far away and visit when I can",
    ),
})

CONTACT = var("family_contact", {
    "rarely_in_touch": (
        "I hardly ever speak to my relatives, maybe at a funeral or a big occasion",
        "my family and I drifted apart and rarely talk",
        "months go by without any contact with my siblings",
    ),
    "monthly_calls": (
        "I call my parents and siblings about once a month",
        "we catch up by phone roughly every few weeks",
        "a long family video call happens around the start of each month",
    ),
    "weekly_dinners": (
        "the whole family gathers at my aunt's table every Sunday",
        "we have a standing weekly meal with my parents and brother",
        "every week without fail I eat with my relatives",
    ),
    "daily_messages": (
        "our family group chat buzzes all day, every day",
        "my sister and I text each other constantly from morning to night",
        "I hear from my mum several times a day",
    ),
})

PET = var("pet_at_home", {
    "no_pet": (
        "there are no animals in my home",
        "I don't have a pet of any kind",
        "it's a pet-free household here",
    ),
    "indoor_cat": (
        "I share my place with a lazy indoor cat",
        "my cat never goes outside and sleeps on my keyboard",
        "a fluffy house cat rules my home",
    ),
    "energetic_young_dog": (
        "I have a bouncy one-year-old dog who needs lots of exercise",
        "my puppy has endless energy and chews everything",
        "a lively young retriever lives with me and wants to run constantly",
    ),
    "elderly_dog": (
        "my dog is thirteen and moves slowly these days",
        "I look after an old, grey-muzzled dog with creaky hips",
        "my senior dog sleeps most of the day and needs gentle walks",
    ),
})

EVENT = var("upcoming_family_event", {
    "nothing_planned": (
        "there's nothing special coming up on the family calendar",
        "no family occasions are on the horizon",
        "our family diary is empty of big events for now",
    ),
    "sibling_wedding": (
        "my brother is getting married in a few months",
        "my sister's wedding is coming up and I'm in the wedding party",
        "there's a sibling's marriage ceremony on the way",
    ),
    "new_baby_niece_or_nephew": (
        "my sister is expecting her first baby soon",
        "a new little niece or nephew is due in the family",
        "my brother and his wife are about to have a baby",
    ),
    "milestone_birthday_party": (
        "my dad turns seventy soon and we're throwing a big party",
        "there's a huge round-number birthday celebration to organise",
        "my grandmother's ninetieth birthday bash is coming up",
    ),
})

DOMAIN = Domain(
    name="family",
    label="family and home life",
    variables=(CAREGIVING, CONTACT, PET, EVENT),
    questions=(
        question("weekend_planning", "How should I plan my weekends?", {
            "caregiving_duty": {
                "no_caregiving": "Your weekends are fully your own, so plan them around what recharges you.",
                "weekly_help_for_parent":
                    "Block the fixed support day first and fit the rest of the weekend around it.",
                "parent_living_with_me":
                    "Arrange a relief sitter for a few hours so you get real breaks at home.",
                "long_distance_caregiving":
                    "Keep one weekend a month open for a trip there and book calls in advance.",
            },
            "pet_at_home": {
                "no_pet": "Overnight trips are easy, as no one must be fed while you're out.",
                "indoor_cat": "A friend dropping by once a day covers short trips for your feline friend.",
                "energetic_young_dog": "Build in off-lead romps and canine-friendly outings for it.",
                "elderly_dog": "Choose unhurried local outings and arrange a sitter for longer absences.",
            },
            "upcoming_family_event": {
                "nothing_planned": "With a quiet stretch ahead, try a new hobby or short getaway.",
                "sibling_wedding": "Reserve a few weekends for fittings, the stag or hen do and rehearsals.",
                "new_baby_niece_or_nephew":
                    "Set aside time to visit the newborn and bring the new parents meals.",
                "milestone_birthday_party":
                    "Save some weekends for planning the festivities and sending invites.",
            },
        }),
        question("keeping_family_bonds_strong", "How can I keep my family relationships strong?", {
            "family_contact": {
                "rarely_in_touch": "Begin small with one friendly note to a single person, not a reunion.",
                "monthly_calls": "Keep the existing rhythm and add a short voice note in between.",
                "weekly_dinners": "Use those shared evenings to have a real one-on-one exchange every time.",
                "daily_messages": "Balance the nonstop chatter with an occasional deeper conversation.",
            },
            "caregiving_duty": {
                "no_caregiving": "Offer support to the older generation before problems arise.",
                "weekly_help_for_parent": "Ask siblings to rotate the support duty so the load is shared.",
                "parent_living_with_me": "Protect time where you are simply a son or daughter, not a nurse.",
                "long_distance_caregiving": "Share updates with siblings through one common document.",
            },
            "upcoming_family_event": {
                "nothing_planned": "Suggest a simple get-together just because.",
                "sibling_wedding": "Help the engaged couple with one concrete task.",
                "new_baby_niece_or_nephew": "Offer practical help to the parents-to-be.",
                "milestone_birthday_party": "Collect photos and stories for the guest of honour.",
            },
        }),
        question("end_of_year_holidays", "How should I handle the end-of-year holidays?", {
            "family_contact": {
                "rarely_in_touch": "Decide calmly whether to join in at all, and keep any visit short.",
                "monthly_calls": "Plan one extended visit to make up for the distance the rest of the year.",
                "weekly_dinners": "Share hosting duties so the regular host can also relax.",
                "daily_messages": "Set some device-free hours so the holidays feel different from usual.",
            },
            "pet_at_home": {
                "no_pet": "Moving between relatives is simple with no one to arrange care for.",
                "indoor_cat": "Book a feeder visit early, as sitters fill up in December.",
                "energetic_young_dog": "Bring your boisterous companion only if hosts can cope with it.",
                "elderly_dog": "Keep trips short so your aging companion isn't left alone for long.",
            },
            "upcoming_family_event": {
                "nothing_planned": "Suggest a low-key gathering, as no other date competes for attention.",
                "sibling_wedding": "Keep spending modest, as the nuptials will need gifts and travel.",
                "new_baby_niece_or_nephew": "Host near the newborn so the tired parents needn't travel.",
                "milestone_birthday_party":
                    "Coordinate so the festivities don't clash with the jubilee plans.",
            },
        }),
        question("time_for_myself", "How can I carve out more time for myself?", {
            "caregiving_duty": {
                "no_caregiving":
                    "You have few outside obligations, so it's mostly about guarding your diary.",
                "weekly_help_for_parent":
                    "Batch chores into the support day so it doesn't spill into other days.",
                "parent_living_with_me": "Try adult day programmes that give you a few hours of your own.",
                "long_distance_caregiving": "Limit coordination calls to fixed slots instead of all day.",
            },
            "pet_at_home": {
                "no_pet": "No feeding routines tie you down, so mornings can be fully yours.",
                "indoor_cat": "Your low-maintenance feline leaves plenty of room for hobbies.",
                "energetic_young_dog": "Combine your own workouts with the daily romp it demands.",
                "elderly_dog": "Short, easy strolls leave spare time, though vet visits may add up.",
            },
            "family_contact": {
                "rarely_in_touch": "Kin demands are light, so they are not the bottleneck here.",
                "monthly_calls": "A predictable check-in rhythm is easy to plan around.",
                "weekly_dinners": "Skip the usual get-together now and then with no guilt.",
                "daily_messages": "Mute the chatter during your protected hours.",
            },
        }),
    ),
    requests=(
        "What do you think I should do?",
        "Could you help me plan around that?",
        "How would you handle this?",
        "Any advice for keeping things balanced?",
        "What should I be thinking about?",
        "Can you help me sort out my priorities?",
    ),
    event_titles=(
        "a change in the family",
        "news at home",
        "a new family arrangement",
    ),
)
