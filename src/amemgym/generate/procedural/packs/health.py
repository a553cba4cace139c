"""Sleep, conditions, caffeine and stress."""

from __future__ import annotations

from ..pack import Domain, question, var

SLEEP = var("sleep_issue", {
    "sleeps_well": (
        "I drop off quickly and wake up rested most mornings",
        "my nights are solid, seven or eight hours without interruption",
        "sleep is one thing I have no trouble with at all",
    ),
    "trouble_falling_asleep": (
        "I lie awake for an hour or more before I finally drift off",
        "getting to sleep is the hard part; my mind races when the lights go out",
        "it takes me ages to nod off at night",
    ),
    "waking_in_the_night": (
        "I keep waking up at two or three and can't settle again",
        "my sleep is broken into pieces by several wake-ups each night",
        "I fall asleep easily but then I'm up in the small hours",
    ),
    "waking_too_early": (
        "I'm wide awake by four every morning, hours before I need to be up",
        "I wake way before dawn and can't get back to sleep",
        "my nights end far too early, around four",
    ),
})

CONDITION = var("managed_condition", {
    "no_chronic_condition": (
        "I don't have any ongoing health conditions",
        "my doctor says I'm in good health with no long-term issues",
        "I'm not on any regular medication or treatment",
    ),
    "type_2_diabetes": (
        "I was diagnosed with type 2 diabetes and check my blood sugar",
        "I manage my glucose levels with metformin",
        "my diabetic condition means watching sugar closely",
    ),
    "high_blood_pressure": (
        "I have hypertension and take tablets for it every morning",
        "my blood pressure readings are too high, so I'm on medication",
        "my doctor is monitoring my raised blood pressure",
    ),
    "migraines": (
        "I get crushing migraines a few times a month",
        "bright light and missed meals trigger my migraine attacks",
        "I suffer from recurring migraines with aura",
    ),
})

CAFFEINE = var("caffeine_habit", {
    "no_caffeine": (
        "I don't drink coffee, tea or anything with caffeine",
        "I gave up caffeine completely",
        "my drinks are water and herbal infusions only",
    ),
    "one_morning_coffee": (
        "I have a single cup of coffee with breakfast and that's it",
        "one coffee in the morning is my whole caffeine intake",
        "I allow myself just the one morning espresso",
    ),
    "several_coffees_a_day": (
        "I get through five or six mugs of coffee a day",
        "coffee keeps me going from morning to late afternoon, cup after cup",
        "I refill my coffee constantly throughout the day",
    ),
    "energy_drinks": (
        "I rely on cans of energy drink to keep me going",
        "I drink two or three energy drinks a day",
        "those sugary caffeinated cans from the fridge are my fuel",
    ),
})

STRESS = var("stress_source", {
    "mostly_calm": (
        "life feels pretty calm and under control at the moment",
        "I'm not under much pressure right now",
        "things are peaceful for me lately; nothing is weighing on me",
    ),
    "money_worries": (
        "bills and costs are what keep me anxious",
        "I worry constantly about covering my bills",
        "financial pressure is my biggest source of stress",
    ),
    "relationship_strain": (
        "a strained relationship with someone close to me is wearing me down",
        "a falling-out with a close friend is on my mind all the time",
        "arguments with people I love have me on edge",
    ),
    "big_life_transition": (
        "I'm in the middle of a huge life change and everything feels uncertain",
        "so much is shifting in my life at once that I feel unmoored",
        "a major transition has turned my routines upside down",
    ),
})

DOMAIN = Domain(
    name="health",
    label="health and wellbeing",
    variables=(SLEEP, CONDITION, CAFFEINE, STRESS),
    questions=(
        question("evening_routine", "What should my evening routine look like?", {
            "sleep_issue": {
                "sleeps_well": "Your current wind-down works, so just keep bedtime consistent.",
                "trouble_falling_asleep": "Dim the lamps well ahead and get up if you're still alert in bed.",
                "waking_in_the_night":
                    "Keep the bedroom cool and avoid liquids late so nothing disturbs you.",
                "waking_too_early": "Push bedtime a little later and block daylight with heavy curtains.",
            },
            "caffeine_habit": {
                "no_caffeine": "A warm mug of something soothing can be part of the ritual.",
                "one_morning_coffee": "Your lone brew before work is harmless for the night ahead.",
                "several_coffees_a_day": "Cut the brews after lunch, since they linger for hours.",
                "energy_drinks": "Swap those stimulant tins for a cold seltzer after lunch.",
            },
            "stress_source": {
                "mostly_calm": "A short reading session is enough to end the day.",
                "money_worries": "Jot the day's cash concerns down so they stay on paper.",
                "relationship_strain": "Agree on a cut-off for difficult conversations well before bed.",
                "big_life_transition": "Keep one fixed ritual each night to anchor you amid the upheaval.",
            },
        }),
        question("snacks_to_keep_around", "What snacks should I keep around?", {
            "managed_condition": {
                "no_chronic_condition": "Any balanced mix of fruit, nuts and yogurt works well for you.",
                "type_2_diabetes":
                    "Choose nuts, cheese and non-starchy vegetables that keep you steady all day.",
                "high_blood_pressure": "Pick unsalted nuts, bananas and low-sodium crackers over crisps.",
                "migraines": "Carry small frequent bites, since an empty stomach can set one off.",
            },
            "caffeine_habit": {
                "no_caffeine": "Dark chocolate is fine for you as an occasional treat.",
                "one_morning_coffee": "Pair the early brew with some protein so it sits well.",
                "several_coffees_a_day": "Add juicy, hydrating snacks to offset all those hot brews.",
                "energy_drinks": "Avoid sweet extras, since the stimulant tins already add plenty.",
            },
            "stress_source": {
                "mostly_calm": "No special adjustments are needed for your mood these days.",
                "money_worries": "Buy staples in bulk so treats stay cheap and easy on the wallet.",
                "relationship_strain":
                    "Keep comfort snacks portioned so tense evenings don't become grazing.",
                "big_life_transition": "Stock easy grab-and-go options for the unpredictable days ahead.",
            },
        }),
        question("doctor_appointment_topics", "What should I bring up at my next doctor's appointment?", {
            "managed_condition": {
                "no_chronic_condition": "Ask about routine screening tests suitable for someone your age.",
                "type_2_diabetes": "Review your HbA1c results and whether your dose still fits.",
                "high_blood_pressure":
                    "Bring a log of home cuff measurements to check the prescription works.",
                "migraines": "Discuss preventive options if the headaches keep coming back.",
            },
            "sleep_issue": {
                "sleeps_well": "Mention that your slumber is sound so that it goes on your record.",
                "trouble_falling_asleep": "Mention the delay before dozing off and ask about therapy for it.",
                "waking_in_the_night":
                    "Mention the fragmented slumber so apnoea or bladder causes get ruled out.",
                "waking_too_early":
                    "Mention that you're up long before you'd like, which can signal low mood.",
            },
            "caffeine_habit": {
                "no_caffeine": "Note that stimulants aren't a factor in your symptoms.",
                "one_morning_coffee": "Your modest daily brew is unlikely to matter for any of this.",
                "several_coffees_a_day": "Be honest about the daily brew count, as it affects heart rate.",
                "energy_drinks": "Mention the stimulant tins, since their sugar and taurine matter.",
            },
        }),
        question("afternoon_energy_slump", "How can I deal with the afternoon energy slump?", {
            "sleep_issue": {
                "sleeps_well": "Since slumber isn't the problem, look at lunch size and movement.",
                "trouble_falling_asleep": "Avoid napping, as it makes dozing off at bedtime harder still.",
                "waking_in_the_night": "A twenty-minute nap can offset the fragmented slumber.",
                "waking_too_early": "A short nap is fine, but keep it before three o'clock.",
            },
            "stress_source": {
                "mostly_calm": "A brisk walk outside is usually enough of a reset.",
                "money_worries": "Avoid checking accounts mid-afternoon when energy is lowest.",
                "relationship_strain": "Step away from message threads that drain you during the day.",
                "big_life_transition": "Keep your days simple while so much around you is in flux.",
            },
            "managed_condition": {
                "no_chronic_condition": "A glass of water and some daylight usually lift it.",
                "type_2_diabetes": "Do a finger-prick test, since a dip after lunch may be the cause.",
                "high_blood_pressure": "Ask whether your prescription is causing the tiredness.",
                "migraines": "Notice the sluggishness that can come before a headache.",
            },
        }),
    ),
    requests=(
        "What would you recommend?",
        "Can you help me look after myself better?",
        "Any advice on how to handle this day to day?",
        "How should I adjust my habits?",
        "Could you suggest a few changes that would help?",
        "What would be a sensible approach for me?",
    ),
    event_titles=(
        "a change in health",
        "a new chapter for wellbeing",
        "a shift in daily habits",
    ),
)
