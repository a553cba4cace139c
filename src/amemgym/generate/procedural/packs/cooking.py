"""Cooking and eating at home."""

from __future__ import annotations

from ..pack import Domain, question, var

KITCHEN = var("kitchen_setup", {
    "hot_plate_only": (
        "all I have to cook on is a single hot plate next to a mini fridge",
        "there's no stove or oven where I'm staying, just one electric burner I plug in on the counter",
        "my cooking gear comes down to a lone plug-in burner and a kettle",
    ),
    "shared_small_kitchen": (
        "I share a cramped kitchen with three flatmates, so shelves and burners are always fought over",
        "the kitchen I use belongs to the whole hallway, and I get one shelf and a corner of the counter",
        "I cook in a tiny communal kitchen where someone else is almost always using the stove",
    ),
    "full_home_kitchen": (
        "I've got a regular kitchen to myself with a four-burner stove, an oven and decent counter space",
        "my kitchen is an ordinary family-sized one: oven, hob, a proper fridge-freezer, nothing fancy",
        "I have a normal kitchen with all the standard appliances and nobody competing for them",
    ),
    "professional_grade_kitchen": (
        "my kitchen has a six-burner range, a steam oven and a walk-in pantry",
        "I cook at home on commercial equipment, including a blast chiller and a heavy stand mixer",
        "I've fitted my kitchen with a salamander grill, a huge gas range and a vacuum sealer",
    ),
})

DIET = var("diet_style", {
    "eats_everything": (
        "there's nothing I avoid: meat, fish, dairy, bread, it all goes on my plate",
        "I'm happy eating any kind of food, from steak to noodles to fish",
        "my plate has no rules at all, I'll eat whatever is served",
    ),
    "vegetarian": (
        "I don't eat meat or fish, but eggs and cheese are still part of my meals",
        "I've cut out meat and seafood while keeping dairy and eggs",
        "I skip anything made from an animal's flesh but still love yogurt and omelettes",
    ),
    "fully_plant_based": (
        "I avoid every animal product, including eggs, milk, honey and butter",
        "my meals contain nothing from animals at all, not even dairy",
        "I eat only plants: no meat, no fish, no eggs and no cheese",
    ),
    "low_carb": (
        "I keep bread, rice, noodles and sugar off my plate and eat mostly protein and vegetables",
        "I'm cutting starches almost completely, so no potatoes, toast or sweets",
        "I count carbohydrates carefully and keep them under about fifty grams a day",
    ),
})

COOK_TIME = var("weeknight_cooking_time", {
    "under_15_minutes": (
        "on weeknights I've got ten minutes, tops, between getting home and eating",
        "by the time I'm home on weekdays I can spare maybe a quarter of an hour for food",
        "most weekday evenings leave me barely enough time to boil a kettle before I have to eat",
    ),
    "about_30_minutes": (
        "I can usually give the evening meal around half an hour on a weekday",
        "weekday evenings leave me roughly thirty minutes to get food on the table",
        "on a normal workday I have about the length of a sitcom episode to cook",
    ),
    "about_an_hour": (
        "I can spend a solid hour making food most weeknights",
        "weeknight cooking gets around sixty minutes from me",
        "on a typical weekday evening I set aside an hour for preparing the meal",
    ),
    "whole_evening_free": (
        "my weekday evenings are wide open, so cooking can take two or three hours if I like",
        "I have entire evenings free during the week and enjoy spending them on long cooking projects",
        "nothing competes with food prep on my weeknights; I can cook from six until late",
    ),
})

SKILL = var("cooking_skill", {
    "barely_cooks": (
        "I can just about manage toast and instant noodles without burning anything",
        "the most ambitious thing I've ever made is scrambled eggs, and even those go wrong",
        "I never learned my way around food; heating a packet is my limit",
    ),
    "follows_simple_recipes": (
        "I can follow a short recipe step by step if it doesn't ask for anything tricky",
        "give me clear instructions with five or six steps and I'll get there",
        "I manage fine with basic recipes, but improvising makes me nervous",
    ),
    "confident_home_cook": (
        "I cook most things without looking anything up and often improvise with what's around",
        "friends say I'm a good cook, and I'm comfortable making sauces, roasts and breads from scratch",
        "I rarely need instructions; I season by taste and adapt dishes on the fly",
    ),
    "trained_chef": (
        "I've got a culinary school diploma and years of restaurant brigade experience behind me",
        "I'm a professionally trained cook who has run a station in a busy bistro",
        "I trained as a chef and have worked the pass in proper restaurants",
    ),
})

GROCERIES = var("grocery_access", {
    "corner_shop_only": (
        "the only food store within reach is a little convenience shop with tins and a few tired vegetables",
        "I buy all my food from the tiny mini-mart at the end of my street because nothing bigger is nearby",
        "my groceries come from a small corner store that mostly stocks snacks, cans and milk",
    ),
    "big_weekly_supermarket": (
        "once a week I do one huge haul at a big-box grocery store and fill a whole trolley",
        "I do a single large shop every Saturday at a hypermarket with everything under one roof",
        "I stock up at a giant supermarket once a week and try not to go back until the next week",
    ),
    "farmers_market_and_specialty": (
        "I get most of my produce from the weekend farmers' market and a nearby butcher and bakery",
        "I shop at small specialty stalls: a fishmonger, a cheese shop and the Sunday market",
        "my food comes from local growers at an open-air market plus a couple of independent delis",
    ),
    "online_delivery": (
        "I order nearly all my groceries through an app and they show up at my door",
        "a delivery van drops off my food order twice a week, so I rarely set foot in a store",
        "I do my grocery shopping on my phone and have it brought to my door",
    ),
})

DOMAIN = Domain(
    name="cooking",
    label="cooking and meals",
    variables=(KITCHEN, DIET, COOK_TIME, SKILL, GROCERIES),
    questions=(
        question("weeknight_dinners", "What kind of weeknight dinners should I plan?", {
            "kitchen_setup": {
                "hot_plate_only": "Favor one-pot soups and skillet meals that need just one heat source.",
                "shared_small_kitchen":
                    "Pick dishes needing few pans that can be cleared away fast for others.",
                "full_home_kitchen":
                    "Mix sheet-pan bakes with simmered sauces, as any everyday recipe works.",
                "professional_grade_kitchen":
                    "Try ambitious sears and sous-vide proteins at very high temperatures.",
            },
            "diet_style": {
                "eats_everything": "Rotate chicken thighs, salmon, lamb mince and couscous for variety.",
                "vegetarian": "Center plates on lentils, paneer and halloumi so each one feels hearty.",
                "fully_plant_based": "Center plates on tofu, tempeh and chickpeas with tahini, never cream.",
                "low_carb": "Pair grilled fillets with leafy greens and cauliflower, not grains.",
            },
            "weeknight_cooking_time": {
                "under_15_minutes":
                    "Stick to assemble-and-go ideas such as wraps, grain bowls or quesadillas.",
                "about_30_minutes": "Go for dishes with one brief simmer, like a quick curry or stir-fry.",
                "about_an_hour": "Slow-roasted trays and stews that need some patience are realistic.",
                "whole_evening_free": "Try slow braises, fresh dough and multi-course menus at leisure.",
            },
        }),
        question("batch_cooking_plan", "How should I approach batch cooking for the week ahead?", {
            "kitchen_setup": {
                "hot_plate_only": "Fill one big pot at a time and cool it in portions right after.",
                "shared_small_kitchen": "Book a quiet slot and keep the batch to two compact containers.",
                "full_home_kitchen": "Run a tray bake and a pot of grains side by side on Sunday.",
                "professional_grade_kitchen":
                    "Prepare in bulk, cool it rapidly, then bag portions for months.",
            },
            "cooking_skill": {
                "barely_cooks": "Begin with a no-fail chili that only asks you to chop and stir.",
                "follows_simple_recipes": "Use a tested plan that lists every stage and exact quantity.",
                "confident_home_cook": "Prepare flexible bases, like a ragu or beans, to riff on later.",
                "trained_chef": "Prep stocks, veloutes and mise en place the way a line does.",
            },
            "grocery_access": {
                "corner_shop_only": "Lean on tinned tomatoes, dried lentils and frozen peas that keep.",
                "big_weekly_supermarket": "Get family packs in one trip and portion them on arrival.",
                "farmers_market_and_specialty":
                    "Build the batch around whatever is in season at that moment.",
                "online_delivery": "Save a repeat basket with every staple so it arrives before prep day.",
            },
        }),
        question("hosting_friends_menu", "What should I make when I host friends for a meal?", {
            "diet_style": {
                "eats_everything": "A slow-roast pork shoulder with crispy roasties pleases most crowds.",
                "vegetarian": "A baked ricotta and spinach lasagne makes a generous centerpiece.",
                "fully_plant_based": "A mushroom and walnut wellington with gravy works as a showpiece.",
                "low_carb": "A platter of grilled lamb, prawns and crisp salads suits the table.",
            },
            "cooking_skill": {
                "barely_cooks": "Keep it to one forgiving main and pick up a ready-made dessert.",
                "follows_simple_recipes": "Choose a tested menu and prepare most of it the day before.",
                "confident_home_cook": "Add a homemade starter and a sauce you build by instinct.",
                "trained_chef": "Plate a tasting menu of small courses with precise garnishes.",
            },
            "grocery_access": {
                "corner_shop_only": "Plan around pantry staples, since fresh choice close by is thin.",
                "big_weekly_supermarket": "Fold all of it into your usual bulk run to avoid extra trips.",
                "farmers_market_and_specialty": "Let the best seasonal finds of that morning shape the menu.",
                "online_delivery": "Schedule the basket a day early in case an item gets swapped.",
            },
        }),
        question("next_technique_to_learn", "Which cooking technique should I work on next?", {
            "cooking_skill": {
                "barely_cooks": "Start by mastering how to boil, fry an egg and steam rice right.",
                "follows_simple_recipes": "Practice sauteing onions slowly and building a plain pan sauce.",
                "confident_home_cook": "Study emulsions, patient braising and shaping loaves by hand.",
                "trained_chef": "Explore fermentation, hydrocolloids or precise pastry lamination.",
            },
            "kitchen_setup": {
                "hot_plate_only": "Choose methods like poaching and simmering that need one ring.",
                "shared_small_kitchen": "Prefer quiet skills such as knife work that need little room.",
                "full_home_kitchen": "Roasting and baking are open to you with what you already own.",
                "professional_grade_kitchen": "Put your setup to smoking, curing and very high-heat searing.",
            },
            "weeknight_cooking_time": {
                "under_15_minutes": "Practice on Sundays, since ordinary dinners allow no slack.",
                "about_30_minutes": "Slot in one short drill per week, such as dicing fast.",
                "about_an_hour": "Reserve one night per week for a slower practice dish.",
                "whole_evening_free": "Commit to a nightly challenge, like a full month of sourdough.",
            },
        }),
    ),
    requests=(
        "Could you help me work out what to cook?",
        "What would you change about how I'm eating?",
        "Any suggestions for making meals easier on myself?",
        "How would you plan my food around that?",
        "Can you give me a few ideas for the coming weeks?",
        "I'd love some practical ideas for my meals.",
    ),
    event_titles=(
        "a shake-up of the kitchen routine",
        "changes to how meals happen at home",
        "a new chapter in eating habits",
    ),
)
