"""Holidays and trips."""

from __future__ import annotations

from ..pack import Domain, question, var

BUDGET = var("travel_budget", {
    "shoestring": (
        "I travel on almost nothing, hostels and instant noodles all the way",
        "every trip I take has to cost as little as humanly possible",
        "my holiday fund is tiny, so I count every coin while away",
    ),
    "midrange": (
        "I can afford decent three-star hotels but nothing extravagant",
        "my holiday spending is moderate: comfortable rooms and the odd nice meal",
        "I set aside a reasonable, middle-of-the-road amount for trips",
    ),
    "comfortable": (
        "I can spend fairly freely on holidays, with good hotels and guided tours",
        "money isn't tight for travel; four-star places are within reach",
        "I budget generously for trips and don't mind paying for convenience",
    ),
    "luxury": (
        "when I travel I stay in five-star resorts and book business class",
        "price barely matters for my holidays; I go for the very best",
        "my trips are all private transfers, suites and fine dining",
    ),
})

COMPANIONS = var("travel_companions", {
    "solo": (
        "I travel by myself, with nobody else to plan around",
        "my trips are always solo adventures",
        "I go on holidays alone and like it that way",
    ),
    "with_partner": (
        "my partner and I always go away together, just the two of us",
        "I travel as a couple with my other half",
        "holidays are a duo thing for me and my spouse",
    ),
    "with_extended_family": (
        "my parents, siblings and their kids all come along on our trips",
        "we travel as a big family group of three generations",
        "holidays mean my whole clan, grandparents included",
    ),
    "with_friends_group": (
        "I go away with a gang of five or six friends",
        "our trips are with my old university crowd",
        "a group of friends and I plan our getaways together",
    ),
})

STYLE = var("preferred_trip_style", {
    "beach_relaxation": (
        "my ideal holiday is lying on the sand with a book and the sea nearby",
        "I want sun, a beach and absolutely nothing scheduled",
        "I travel to unwind by the water and swim every day",
    ),
    "city_sightseeing": (
        "I love exploring museums, old streets and landmarks in big cities",
        "give me a capital with galleries and historic neighbourhoods to wander",
        "my favourite trips are urban ones full of architecture and culture",
    ),
    "hiking_and_nature": (
        "I travel to walk in the mountains and sleep near forests",
        "my holidays are about trails, lakes and wild landscapes",
        "I pick destinations for their national parks and long walks",
    ),
    "road_trip": (
        "I love driving from town to town with no fixed itinerary",
        "my favourite way to travel is a long drive with stops wherever looks interesting",
        "I plan holidays as journeys by car along scenic routes",
    ),
})

TIME_OFF = var("time_off_available", {
    "long_weekends_only": (
        "I can only get away for three or four days at a stretch",
        "my leave comes in small pieces, a Friday or Monday here and there",
        "the most time off I can take at once is an extended weekend",
    ),
    "one_week": (
        "I can take a single week off for my next break",
        "my holiday allowance gives me seven days away",
        "I've booked one week of leave for travelling",
    ),
    "two_weeks": (
        "I've got a full fortnight off coming up",
        "my next break is fourteen days long",
        "I can take two weeks in a row away from everything",
    ),
    "a_month_or_more": (
        "I have over a month free for travel",
        "I've arranged a long sabbatical to travel",
        "I can be away for five weeks or longer this time",
    ),
})

FLYING = var("flying_situation", {
    "frequent_flyer_status": (
        "I fly constantly and have elite status with my airline",
        "airports feel like a second home; I'm on planes all the time",
        "I rack up so many air miles that upgrades are routine",
    ),
    "short_haul_only": (
        "long flights leave me miserable, so three hours in the air is my limit",
        "I'm fine on planes as long as the hop is short",
        "anything longer than a short flight wipes me out for days",
    ),
    "avoids_flying": (
        "I've stopped flying entirely for environmental reasons",
        "I don't board planes anymore, so trains and ferries are my options",
        "I refuse to fly, no matter the destination",
    ),
    "nervous_but_willing": (
        "flying makes my palms sweat, but I'll board if I must",
        "takeoff terrifies me, though I do force myself onto planes",
        "I'm an anxious flyer who grips the armrest the whole way but still goes",
    ),
})

DOMAIN = Domain(
    name="travel",
    label="travel and holidays",
    variables=(BUDGET, COMPANIONS, STYLE, TIME_OFF, FLYING),
    questions=(
        question("next_destination", "Where should I go on my next trip?", {
            "preferred_trip_style": {
                "beach_relaxation": "Look at a quiet Greek island or the Algarve coast for lazy, sunny days.",
                "city_sightseeing":
                    "Look at Vienna or Lisbon for walkable boulevards and famous collections.",
                "hiking_and_nature":
                    "Look at the Dolomites or Patagonia for rugged peaks and wilderness huts.",
                "road_trip":
                    "Look at the Scottish Highlands or Route 66 for a self-guided loop to improvise.",
            },
            "travel_companions": {
                "solo": "Choose a place with sociable hostels and easy tours to meet people.",
                "with_partner": "Pick a romantic spot with intimate dinners and a boutique stay.",
                "with_extended_family": "Pick a villa roomy enough for everyone from toddlers to elders.",
                "with_friends_group":
                    "Pick somewhere with shared rentals and lively nights for a pack of mates.",
            },
            "time_off_available": {
                "long_weekends_only": "Keep it within a short direct hop so little is lost in transit.",
                "one_week": "One region, explored at an easy pace, fits that span well.",
                "two_weeks": "Combine two neighbouring regions at an unhurried pace.",
                "a_month_or_more": "Consider a multi-country loop, since you can linger anywhere.",
            },
        }),
        question("holiday_budgeting", "How should I budget for my next holiday?", {
            "travel_budget": {
                "shoestring": "Track outlays daily, eat from markets and favor dorm beds or couchsurfing.",
                "midrange": "Divide the cash between reliable mid-priced lodging and a few paid outings.",
                "comfortable":
                    "Allow for quality lodging and a couple of escorted excursions without stress.",
                "luxury": "Prioritise exceptional service and treat prices as a secondary concern.",
            },
            "travel_companions": {
                "solo": "Watch for single supplements, which inflate room prices for one guest.",
                "with_partner": "Share a double room to halve the largest fixed cost of the stay.",
                "with_extended_family": "Agree upfront who pays for what across the households involved.",
                "with_friends_group": "Use a shared expense app so everyone settles up fairly at the end.",
            },
            "time_off_available": {
                "long_weekends_only": "Transport eats a big share of a short getaway, so keep it close.",
                "one_week": "Price the whole span as a package to catch bundle discounts.",
                "two_weeks": "Mix pricier and cheaper legs to balance a lengthier stay.",
                "a_month_or_more": "Negotiate lengthy-stay rental rates, which cut nightly costs sharply.",
            },
        }),
        question("planning_the_journey", "How should I plan the journey itself?", {
            "flying_situation": {
                "frequent_flyer_status":
                    "Use your loyalty perks for lounge access and better seats on the way.",
                "short_haul_only": "Break any lengthy route into legs with an overnight stop in between.",
                "avoids_flying": "Go overland by rail or sea and treat the transit as part of the fun.",
                "nervous_but_willing":
                    "Pick direct routes on large aircraft and get a calming app in advance.",
            },
            "time_off_available": {
                "long_weekends_only": "Keep transit under a few hours so the short getaway isn't eaten up.",
                "one_week": "Allow half a day of transit at each end of the getaway.",
                "two_weeks": "You can afford a slower scenic route for part of the journey.",
                "a_month_or_more": "Slow overland segments between stops become a pleasure.",
            },
            "travel_budget": {
                "shoestring": "Hunt for overnight buses and no-frills carriers to save on a bed.",
                "midrange": "Compare fares across a few sites and reserve about six weeks out.",
                "comfortable": "Pay for sensible departure times and seat selection.",
                "luxury": "Reserve premium cabins and chauffeured rides door to door.",
            },
        }),
        question("packing_list", "What should I pack for my next trip?", {
            "preferred_trip_style": {
                "beach_relaxation": "Bring swimwear, reef-safe sunscreen and a light cover-up.",
                "city_sightseeing": "Bring cushioned sneakers and a compact day bag for touring.",
                "hiking_and_nature": "Bring broken-in boots, a rain shell and a basic first-aid kit.",
                "road_trip": "Bring a phone mount and snacks for extended spells at the wheel.",
            },
            "flying_situation": {
                "frequent_flyer_status": "Keep a ready-packed toiletry bag, since you're airborne so often.",
                "short_haul_only": "Pack a lumbar cushion for the lengthier legs you can't avoid.",
                "avoids_flying": "Liquid rules don't apply, so bring full-size bottles and food.",
                "nervous_but_willing": "Carry noise-cancelling headphones and something absorbing to read.",
            },
            "travel_companions": {
                "solo": "A padlock and a spare card stored apart keep you safer on your own.",
                "with_partner": "Share one kit of toiletries and chargers between the pair of you two.",
                "with_extended_family": "Bring a shared first-aid pouch and games for all ages.",
                "with_friends_group": "Coordinate so only one person brings the speaker and the chargers.",
            },
        }),
    ),
    requests=(
        "Can you help me plan this?",
        "What would you recommend for my next getaway?",
        "Any ideas on how to make the most of it?",
        "How would you approach the trip planning?",
        "Could you give me some suggestions?",
        "What should I think about before booking?",
    ),
    event_titles=(
        "a change in travel plans",
        "new circumstances for holidays",
        "a rethink of how I travel",
    ),
)
