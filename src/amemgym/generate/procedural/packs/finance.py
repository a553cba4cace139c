"""Money: saving, debt, investing and budgeting."""

from __future__ import annotations

from ..pack import Domain, question, var

GOAL = var("savings_goal", {
    "emergency_cushion": (
        "I'm building a pot that would cover six months of bills if anything went wrong",
        "my priority is a rainy-day reserve for unexpected repairs or losing my income",
        "what I'm saving for is a safety net, so a surprise expense doesn't sink me",
    ),
    "home_deposit": (
        "I'm putting money aside to buy my first flat",
        "every spare coin goes toward the down payment on a place of my own",
        "I'm saving hard so I can get a mortgage on a house",
    ),
    "retirement_pot": (
        "I'm focused on building up savings for when I stop working",
        "my main goal is a comfortable pension pot for later life",
        "I'm putting money away for my old age",
    ),
    "new_car_fund": (
        "I'm saving to buy a reliable car outright",
        "my current savings target is a vehicle, paid in cash",
        "I'm setting money aside to replace my old car without borrowing",
    ),
})

DEBT = var("debt_situation", {
    "debt_free": (
        "I don't owe anyone a penny",
        "I have no loans or outstanding balances of any kind",
        "I cleared every debt I had and owe nothing",
    ),
    "credit_card_balance": (
        "I'm carrying a balance on my credit card that keeps growing with interest",
        "I owe a few thousand on plastic at a painful rate",
        "my card statement shows a revolving debt I can't clear each month",
    ),
    "student_loan_repayments": (
        "a chunk of each paycheck goes to repaying my university loans",
        "I'm still paying back what I borrowed for my degree",
        "I have student debt that gets deducted from my salary",
    ),
    "medical_bills_payment_plan": (
        "I'm paying off hospital bills in monthly instalments",
        "after an operation I owe the clinic and pay it down bit by bit",
        "I'm on a payment plan for a large medical invoice",
    ),
})

INVESTING = var("investing_experience", {
    "never_invested": (
        "I've never bought a share or a fund in my life",
        "investing is completely foreign to me; my money just sits in a current account",
        "I have zero experience with the stock market",
    ),
    "savings_account_only": (
        "all my savings are in a high-interest deposit account, nothing else",
        "I keep money in a savings account but have never touched investments",
        "my only financial product is a bank savings account",
    ),
    "index_fund_investor": (
        "I put money into low-cost index trackers every month",
        "I own a few broad market funds that follow the whole index",
        "I invest passively in ETFs that track the global market",
    ),
    "active_stock_picker": (
        "I research companies and buy individual shares myself",
        "I trade single stocks regularly and follow earnings reports",
        "I manage my own portfolio of hand-picked companies",
    ),
})

METHOD = var("budgeting_method", {
    "no_tracking": (
        "I don't keep track of where my money goes at all",
        "I just check my balance and hope for the best",
        "there's no budget in my life; I spend and see what's left",
    ),
    "spreadsheet": (
        "I log every expense in a spreadsheet I built myself",
        "I keep a detailed Excel sheet of income and outgoings",
        "my budget lives in a homemade spreadsheet with a tab per month",
    ),
    "cash_envelopes": (
        "I withdraw cash and split it into labelled envelopes for each category",
        "I run my money with physical envelopes: food, transport, fun",
        "I pay for almost everything in notes from envelopes I fill each payday",
    ),
    "budgeting_app": (
        "an app on my phone categorises every transaction automatically",
        "I use a budgeting app linked to my bank accounts",
        "my spending is tracked by a money app that sends me alerts",
    ),
})

RISK = var("risk_tolerance", {
    "very_cautious": (
        "the thought of losing even a little money keeps me up at night",
        "I want my money safe above all, even if it barely grows",
        "I can't stomach any chance of my savings going down",
    ),
    "balanced": (
        "I'm fine with some ups and downs if the long-term growth is reasonable",
        "a middle path between safety and growth suits me",
        "I can handle moderate swings but nothing wild",
    ),
    "growth_oriented": (
        "I'm happy to ride out big drops for higher long-term returns",
        "growth matters more to me than short-term stability",
        "I can leave money invested through crashes without panicking",
    ),
    "speculative": (
        "I love high-risk bets like crypto and small startups",
        "I'm willing to gamble a lot for a shot at huge gains",
        "I chase volatile investments that could double or vanish",
    ),
})

DOMAIN = Domain(
    name="finance",
    label="money and finances",
    variables=(GOAL, DEBT, INVESTING, METHOD, RISK),
    questions=(
        question("using_spare_money", "What should I do with any spare money each month?", {
            "savings_goal": {
                "emergency_cushion":
                    "Direct the surplus into an instant-access account you can reach within a day.",
                "home_deposit": "Channel it into a starter-buyer account that adds a bonus for property.",
                "retirement_pot":
                    "Channel it into a workplace or private scheme with tax relief for decades ahead.",
                "new_car_fund": "Park it in a fixed-term saver that matures when the purchase is due.",
            },
            "debt_situation": {
                "debt_free": "With no repayments due, every bit can go to your goals.",
                "credit_card_balance":
                    "First wipe out the costliest liability, whose charges beat any return.",
                "student_loan_repayments":
                    "Leave the income-linked deductions as they are and save alongside.",
                "medical_bills_payment_plan":
                    "Keep up with the healthcare arrangement before building anything else.",
            },
            "risk_tolerance": {
                "very_cautious": "Stick to insured accounts where the capital cannot fall.",
                "balanced": "Blend cash with a mixed fund that holds bonds and equities.",
                "growth_oriented": "Favor a global equity tracker and ignore temporary dips.",
                "speculative": "Cap punts on risky assets at a tenth and keep the rest sensible.",
            },
        }),
        question("approach_to_investing", "How should I approach investing this year?", {
            "investing_experience": {
                "never_invested": "Begin with a beginner's guide and open a simple tax-free wrapper.",
                "savings_account_only": "Move a small slice out of cash and see how a diversified mix feels.",
                "index_fund_investor": "Keep the automatic contributions going and rebalance once a year.",
                "active_stock_picker": "Review each holding's thesis and trim positions that grew too large.",
            },
            "risk_tolerance": {
                "very_cautious": "Government bonds and fixed deposits match your comfort level.",
                "balanced": "A sixty-forty split of equities and bonds fits your temperament.",
                "growth_oriented": "An equity-heavy allocation with a distant horizon fits your temperament.",
                "speculative": "Ring-fence a modest play pot for thrill-seeking punts and protect the core.",
            },
            "savings_goal": {
                "emergency_cushion":
                    "Hold the contingency buffer in plain deposits, not in the stock market.",
                "home_deposit": "Funds needed for a property purchase soon should stay out of equities.",
                "retirement_pot": "Decades until you need it mean you can sit through downturns calmly.",
                "new_car_fund":
                    "A sum earmarked for a purchase in a few years belongs in protected deposits.",
            },
        }),
        question("reviewing_the_budget", "How should I review my monthly budget?", {
            "budgeting_method": {
                "no_tracking": "Start by exporting a quarter's statements and sorting them into groups.",
                "spreadsheet": "Add a summary chart to your workbook to spot trends at a glance.",
                "cash_envelopes": "Count what remains in each pouch at period end and adjust the refills.",
                "budgeting_app": "Review the automatic labels for mistakes and set limits per label.",
            },
            "debt_situation": {
                "debt_free": "Keep an eye out for subscriptions creeping back in.",
                "credit_card_balance": "Put a fixed amount toward the costly liability first.",
                "student_loan_repayments": "Treat the payroll deduction as fixed and plan on net earnings.",
                "medical_bills_payment_plan": "Confirm the healthcare repayments are on schedule.",
            },
            "savings_goal": {
                "emergency_cushion": "Measure progress in how many weeks of costs are protected.",
                "home_deposit": "Track how near you are to the property figure you set yourself.",
                "retirement_pot":
                    "Compare contributions with the living standard you'll want after work ends.",
                "new_car_fund": "Track how close you are to the price of the motor you want.",
            },
        }),
        question("money_skills_to_learn", "What should I learn next about managing money?", {
            "investing_experience": {
                "never_invested": "Learn the basics of equities, bonds and pooled vehicles first.",
                "savings_account_only": "Study how inflation erodes cash and why diversification helps.",
                "index_fund_investor": "Dig into asset allocation and tax-efficient withdrawal plans.",
                "active_stock_picker":
                    "Study valuation methods and the behavioural traps of frequent dealing.",
            },
            "budgeting_method": {
                "no_tracking": "A plain fifty-thirty-twenty rule is a good first framework.",
                "spreadsheet": "Learn formulas that forecast the coming quarter for you.",
                "cash_envelopes": "Learn to mirror the pouch method with digital sub-wallets.",
                "budgeting_app": "Learn to read your tool's reports beyond the headline totals.",
            },
            "risk_tolerance": {
                "very_cautious": "Understand how inflation quietly shrinks sums kept too conservatively.",
                "balanced": "Understand how rebalancing keeps a mixed portfolio on target.",
                "growth_oriented":
                    "Understand timing danger near withdrawal before relying on equities alone.",
                "speculative": "Understand position sizing so one loss can't wipe you out.",
            },
        }),
    ),
    requests=(
        "Can you help me figure out my next steps?",
        "What would you suggest for my finances?",
        "How should I think about my money right now?",
        "Any advice on getting my finances in order?",
        "Could you help me make a plan?",
        "What would you do in my position?",
    ),
    event_titles=(
        "a change in money matters",
        "a financial turning point",
        "new circumstances with finances",
    ),
)
