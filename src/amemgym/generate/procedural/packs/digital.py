"""Devices, connectivity and online safety."""

from __future__ import annotations

from ..pack import Domain, question, var

DEVICE = var("main_device", {
    "smartphone_only": (
        "my phone is the only computer I own",
        "I do everything online from my mobile; there's no laptop in my life",
        "I don't have a computer, just my smartphone",
    ),
    "aging_laptop": (
        "I'm still using a laptop from years ago that takes ages to start",
        "my old notebook computer wheezes and the battery barely lasts",
        "my laptop is eight years old and painfully slow",
    ),
    "powerful_desktop": (
        "I have a fast desktop tower with a big monitor",
        "my main machine is a high-end desktop PC",
        "I work on a beefy desktop computer with lots of memory",
    ),
    "tablet_with_keyboard": (
        "I use a tablet with a clip-on keyboard for everything",
        "my main device is an iPad with a keyboard case",
        "a tablet and a folding keyboard are all the computer I need",
    ),
})

CONNECTION = var("internet_connection", {
    "fast_fibre": (
        "I've got gigabit fibre that never lags",
        "my broadband is lightning fast and rock solid",
        "my home connection streams anything instantly",
    ),
    "slow_and_patchy": (
        "my internet crawls and drops out several times a day",
        "the connection at home is painfully slow and unreliable",
        "pages take forever to load and calls freeze constantly",
    ),
    "mobile_data_only": (
        "I have no home broadband and rely on my phone's data plan",
        "all my internet comes from a 4G hotspot with a monthly cap",
        "I tether to my mobile for every bit of connectivity",
    ),
    "public_wifi_only": (
        "I get online at the library and coffee shops since I have no internet at home",
        "my only connection is the free Wi-Fi at cafes",
        "I rely on public hotspots in town to go online",
    ),
})

COMFORT = var("tech_comfort", {
    "needs_step_by_step_help": (
        "technology confuses me and I need instructions for every click",
        "I get lost quickly with gadgets and need someone to walk me through each step",
        "settings menus baffle me completely",
    ),
    "comfortable_everyday_user": (
        "I handle everyday tech fine but I'm no expert",
        "I can install apps and sort out small problems myself",
        "I'm an average user, comfortable with the basics",
    ),
    "power_user_with_scripts": (
        "I automate chores on my computer with scripts and keyboard shortcuts",
        "I'm a power user who tweaks every setting and writes little programs",
        "I run my own scripts and command-line tools for daily tasks",
    ),
    "builds_own_hardware": (
        "I assemble my own computers from parts",
        "I solder, upgrade components and repair my own gadgets",
        "I've built every PC I own by hand",
    ),
})

PRIVACY = var("privacy_concern", {
    "not_worried": (
        "I don't really care who sees my data online",
        "privacy isn't something I think about; I click accept on everything",
        "I'm relaxed about sharing personal info with apps",
    ),
    "moderately_careful": (
        "I'm reasonably careful online but don't go overboard",
        "I use decent passwords and avoid obvious scams, nothing more",
        "I take the usual precautions without obsessing",
    ),
    "very_privacy_conscious": (
        "I'm extremely protective of my data and use encrypted everything",
        "I avoid big tech services because of tracking",
        "I block trackers, use a VPN and never share my location",
    ),
    "recently_hacked": (
        "someone broke into my email account a few weeks ago",
        "I was hacked recently and lost access to my social media",
        "my bank card details were stolen online last month",
    ),
})

DOMAIN = Domain(
    name="digital",
    label="devices and online life",
    variables=(DEVICE, CONNECTION, COMFORT, PRIVACY),
    questions=(
        question("backing_up_files", "How should I back up my photos and files?", {
            "main_device": {
                "smartphone_only": "Turn on automatic photo sync and clear space on the handset monthly.",
                "aging_laptop": "Copy your files off that worn-out unit now, before its disk fails.",
                "powerful_desktop": "Add a second internal drive and mirror your folders to it nightly.",
                "tablet_with_keyboard": "Use the slate's cloud sync and export albums to a USB stick.",
            },
            "internet_connection": {
                "fast_fibre": "Full cloud uploads are quick for you, so sync continuously.",
                "slow_and_patchy": "Lean on a local drive and upload only key items overnight.",
                "mobile_data_only": "Sync only on unlimited networks so you don't burn your allowance.",
                "public_wifi_only": "Keep an external drive as the main copy and sync when out.",
            },
            "tech_comfort": {
                "needs_step_by_step_help": "Pick a single guided service and ask someone to set it up once.",
                "comfortable_everyday_user": "A mainstream backup app with its defaults will serve you.",
                "power_user_with_scripts": "Schedule versioned snapshots with rsync or restic on a timer.",
                "builds_own_hardware": "Build a small RAID network box for redundant home storage.",
            },
        }),
        question("tech_upgrades", "Should I upgrade any of my tech, and how?", {
            "main_device": {
                "smartphone_only": "An affordable clamshell model with a real keypad would ease long forms.",
                "aging_laptop": "A solid-state drive swap or a replacement would save you hours.",
                "powerful_desktop": "Your rig is strong, so add a portable option only if you roam.",
                "tablet_with_keyboard": "Your slate covers most needs, so upgrade only storage if tight.",
            },
            "tech_comfort": {
                "needs_step_by_step_help": "Choose a model a helper knows well so support is easy to get.",
                "comfortable_everyday_user": "Stick with the brand you know to keep the learning curve flat.",
                "power_user_with_scripts": "Favor open systems that you can customise however you like.",
                "builds_own_hardware": "Buy individual bits, not prebuilt rigs, and plan a custom build.",
            },
            "privacy_concern": {
                "not_worried": "Default settings on any new device will be fine for you.",
                "moderately_careful": "Turn on disk encryption and updates when you set it up.",
                "very_privacy_conscious": "Prefer de-Googled or open firmware options where possible.",
                "recently_hacked": "Wipe old devices fully and set new ones up from scratch.",
            },
        }),
        question("keeping_accounts_safe", "How can I keep my accounts and data safe?", {
            "privacy_concern": {
                "not_worried": "Even carefree users need unique logins for money and mail logins.",
                "moderately_careful": "Add two-factor sign-in to your most important logins next.",
                "very_privacy_conscious": "Consider hardware keys and a self-hosted manager for credentials.",
                "recently_hacked": "Change every credential now, check forwarding rules and freeze payments.",
            },
            "tech_comfort": {
                "needs_step_by_step_help": "Ask a trusted helper to set up a manager with you.",
                "comfortable_everyday_user": "A popular credential manager app is easy to adopt.",
                "power_user_with_scripts": "Audit your logins with breach-check services regularly.",
                "builds_own_hardware": "Firewall your home network and isolate smart devices.",
            },
            "internet_connection": {
                "fast_fibre": "Change the default router admin password straight away.",
                "slow_and_patchy": "Let updates finish overnight rather than skipping them.",
                "mobile_data_only": "Keep that shared LTE link locked with a strong passphrase.",
                "public_wifi_only": "Avoid banking on open networks unless you use a VPN.",
            },
        }),
        question("smooth_video_calls", "How can I make video calls with family go smoothly?", {
            "internet_connection": {
                "fast_fibre": "Bandwidth isn't an issue, so use HD video and screen sharing freely.",
                "slow_and_patchy": "Turn video off when it stutters and fall back to audio only if needed.",
                "mobile_data_only": "Lower the resolution to save your allowance during lengthy chats.",
                "public_wifi_only": "Find a quiet study booth somewhere and bring headphones.",
            },
            "main_device": {
                "smartphone_only": "Prop the handset on a small stand at eye level.",
                "aging_laptop": "Close other programs so the elderly unit keeps up.",
                "powerful_desktop": "Add a decent webcam and microphone to the rig.",
                "tablet_with_keyboard": "Use the slate's front camera in landscape mode.",
            },
            "privacy_concern": {
                "not_worried": "Any mainstream calling app will do for you.",
                "moderately_careful": "Use a known app and send links only privately.",
                "very_privacy_conscious": "Choose a calling app with end-to-end protection.",
                "recently_hacked": "Confirm call links directly, since scammers copy them.",
            },
        }),
    ),
    requests=(
        "What would you recommend?",
        "Can you help me sort this out?",
        "How should I set things up?",
        "Any advice for someone in my situation?",
        "Could you walk me through my options?",
        "What's the sensible thing to do here?",
    ),
    event_titles=(
        "a change in tech setup",
        "a new digital situation",
        "a shake-up of devices and accounts",
    ),
)
