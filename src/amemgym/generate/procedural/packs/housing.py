"""Home, tenure and neighbourhood."""

from __future__ import annotations

from ..pack import Domain, question, var

TENURE = var("housing_tenure", {
    "renting_short_lease": (
        "I'm on a six-month rental contract that might not be renewed",
        "my lease is short-term and the landlord could ask me to leave soon",
        "I rent month to month with no long commitment",
    ),
    "renting_long_term": (
        "I've rented the same place for years on a long lease",
        "my landlord and I have a stable multi-year rental agreement",
        "I'm a long-standing tenant with a secure contract",
    ),
    "recent_homeowner": (
        "I just got the keys to a place I bought",
        "I finally own my home; the purchase went through recently",
        "the place I live in is mine now, freshly purchased",
    ),
    "living_with_relatives": (
        "I live in my parents' house and pay them a bit toward the bills",
        "I've moved back in with family and have my old room again",
        "I share my aunt and uncle's home while I get on my feet",
    ),
})

AREA = var("neighborhood_type", {
    "dense_city_center": (
        "I live right in the heart of the city, surrounded by tower blocks and shops",
        "my street is downtown, with bars, offices and crowds everywhere",
        "everything is within a few blocks of me in the busy centre",
    ),
    "quiet_suburb": (
        "I'm in a leafy residential suburb of family houses",
        "my area is a calm commuter suburb with cul-de-sacs and lawns",
        "I live in the suburbs, twenty minutes out of the centre",
    ),
    "small_town": (
        "I live in a small market town where everyone knows each other",
        "my town has one high street and a few thousand people",
        "it's a little town with a weekly market and a single supermarket",
    ),
    "rural_countryside": (
        "I live out in the countryside with fields all around",
        "my nearest neighbour is a farm a kilometre away",
        "it's properly rural here, with no shop within walking distance",
    ),
})

NOISE = var("noise_situation", {
    "quiet_home": (
        "it's wonderfully silent where I live, day and night",
        "I rarely hear a sound from outside or from neighbours",
        "my home is peaceful and hushed",
    ),
    "noisy_neighbours": (
        "the people upstairs stomp around and play music late",
        "my neighbours argue loudly and their TV blares through the wall",
        "I can hear every footstep and party next door",
    ),
    "busy_road_traffic": (
        "a main road runs right outside, so lorries rumble past all day",
        "traffic noise from the dual carriageway never stops",
        "buses and cars roar past at all hours",
    ),
    "construction_nearby": (
        "there's a building site next door with drills from seven in the morning",
        "they're putting up an apartment block across the street and the pile driver never stops",
        "roadworks and cranes around my building make a racket all day",
    ),
})

UPKEEP = var("home_upkeep_issue", {
    "no_repairs_needed": (
        "everything in my home is in good working order",
        "the place is in great condition with nothing broken",
        "I have no maintenance problems at all right now",
    ),
    "damp_and_mould": (
        "black mould keeps creeping up the bathroom walls",
        "my home smells musty and there's condensation everywhere",
        "damp patches are spreading on the bedroom ceiling",
    ),
    "old_drafty_windows": (
        "cold air whistles in through my old window frames",
        "the single-glazed windows rattle and let the chill in",
        "I can feel a breeze through the gaps around the windows",
    ),
    "unreliable_heating": (
        "my boiler keeps breaking down and leaving me without heat",
        "the radiators only work when they feel like it",
        "the heating system is ancient and cuts out regularly",
    ),
})

OUTDOOR = var("outdoor_space", {
    "no_outdoor_space": (
        "I have no outdoor space at all, not even a windowsill worth mentioning",
        "there's no balcony, yard or garden at my place",
        "my home has no private outside area whatsoever",
    ),
    "small_balcony": (
        "I have a tiny balcony with room for two chairs",
        "my only outside space is a narrow balcony",
        "a little balcony is all the fresh air I've got at home",
    ),
    "shared_courtyard": (
        "our building has a communal courtyard everyone uses",
        "I share an inner yard with the other residents",
        "there's a shared green patch behind the block for all the residents",
    ),
    "private_garden": (
        "I have my own garden with a lawn and flower beds",
        "there's a private back garden that's all mine",
        "my home comes with a decent garden plot",
    ),
})

DOMAIN = Domain(
    name="housing",
    label="home and neighbourhood",
    variables=(TENURE, AREA, NOISE, UPKEEP, OUTDOOR),
    questions=(
        question("making_home_comfortable", "How can I make my home more comfortable this season?", {
            "home_upkeep_issue": {
                "no_repairs_needed": "With the basics sound, focus on soft lighting and textiles.",
                "damp_and_mould": "Run a dehumidifier and ventilate daily to fight the moisture.",
                "old_drafty_windows": "Fit thermal curtains and draught-excluder strips on every opening.",
                "unreliable_heating": "Keep a portable electric warmer as backup and book a service.",
            },
            "noise_situation": {
                "quiet_home": "Enjoy the calm; a little background radio makes it feel lived-in.",
                "noisy_neighbours": "Add thick rugs and a loaded bookcase on the adjoining side.",
                "busy_road_traffic":
                    "Use heavy drapes at the front and a fan or white-hum machine for sleep.",
                "construction_nearby": "Plan restful activities for when the crews down tools.",
            },
            "housing_tenure": {
                "renting_short_lease": "Stick to portable, no-damage upgrades you can take with you.",
                "renting_long_term":
                    "Ask the owner before bigger changes; many agree for reliable occupants.",
                "recent_homeowner": "You're free to make permanent improvements that add value.",
                "living_with_relatives":
                    "Agree on changes with the household first, since the property is theirs.",
            },
        }),
        question("making_the_most_of_the_area", "How can I make the most of where I live?", {
            "neighborhood_type": {
                "dense_city_center": "Explore late-opening galleries, food halls and rooftop cinemas nearby.",
                "quiet_suburb": "Join the residents' association and map cycle routes to green spaces.",
                "small_town": "Get involved in the library, the summer fete and local fundraisers.",
                "rural_countryside": "Learn the footpaths and get to know the closest villages and growers.",
            },
            "outdoor_space": {
                "no_outdoor_space": "Make the most of public parks, since you have no alfresco spot.",
                "small_balcony": "A couple of pots of herbs can turn the ledge into a retreat.",
                "shared_courtyard": "Suggest a planting day with the other households downstairs.",
                "private_garden": "Grow vegetables in raised planters and host friends on the grass.",
            },
            "housing_tenure": {
                "renting_short_lease": "Don't sink money into things you can't take when you next move.",
                "renting_long_term": "You're settled enough to put down roots in local groups.",
                "recent_homeowner": "Introduce yourself around, as you're likely staying a good while.",
                "living_with_relatives": "Ask your hosts to show you the area's hidden local spots.",
            },
        }),
        question("home_improvement_priorities", "What home improvements should I prioritise?", {
            "housing_tenure": {
                "renting_short_lease": "Only do removable fixes, because you may be gone soon.",
                "renting_long_term": "Press the owner on structural jobs and do cosmetic ones yourself.",
                "recent_homeowner": "Get a survey-based list and tackle structural work before decorating.",
                "living_with_relatives": "Offer to help with projects the household already wants.",
            },
            "home_upkeep_issue": {
                "no_repairs_needed": "Nothing is urgent, so put money toward upgrades you'll enjoy.",
                "damp_and_mould": "Find the source of the moisture before any redecorating.",
                "old_drafty_windows": "Upgraded double-pane units will pay for themselves in winter.",
                "unreliable_heating": "Get a new central unit fitted before the winter months arrive.",
            },
            "outdoor_space": {
                "no_outdoor_space": "Consider sill planters to bring a little greenery in.",
                "small_balcony": "Fold-away furniture makes that ledge usable year-round.",
                "shared_courtyard": "Propose joint upgrades like benches with the neighbours.",
                "private_garden": "A patio or shed adds usable square metres beyond the walls.",
            },
        }),
        question("relaxing_at_home", "How can I relax better at home?", {
            "noise_situation": {
                "quiet_home": "Lean into the stillness with meditation or an unhurried bath.",
                "noisy_neighbours": "Isolating headphones and a polite request to the culprits help.",
                "busy_road_traffic": "Retreat to the rooms furthest from the front during downtime.",
                "construction_nearby": "Schedule relaxation for after the crews leave each evening.",
            },
            "outdoor_space": {
                "no_outdoor_space": "Bring nature in with plants and open the curtains to the sky.",
                "small_balcony": "Morning coffee on the ledge is a cheap daily reset.",
                "shared_courtyard": "Claim a quiet corner downstairs at off-peak times.",
                "private_garden": "Hang a hammock or set up a bench among the plants.",
            },
            "neighborhood_type": {
                "dense_city_center": "Seek out a nearby park bench as a break from the bustle.",
                "quiet_suburb": "Evening strolls along tree-lined avenues are an easy unwind.",
                "small_town": "A slow wander through the historic lanes helps you switch off.",
                "rural_countryside": "Long rambles across open pasture are right on your doorstep.",
            },
        }),
    ),
    requests=(
        "What would you suggest I do?",
        "Can you help me make the best of it?",
        "How would you approach this?",
        "Any practical tips for my situation?",
        "Could you help me think through my options?",
        "What should I prioritise?",
    ),
    event_titles=(
        "a change at home",
        "news about where I live",
        "a new housing situation",
    ),
)
