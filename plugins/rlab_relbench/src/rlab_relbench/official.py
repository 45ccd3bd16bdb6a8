"""Official RelBench datasets and tasks, and the best published test result of each.

The names and numbers come from the RelBench leaderboard and papers as of mid-2026
(``relbench_sota.json`` of this project's reference). The numbers are a bar, not a target.
"""

from __future__ import annotations

V1_REPO = "stanford-star/relbench-v1"
V2_REPO = "stanford-star/relbench-v2-extra"

DATASETS: dict[str, list[str]] = {
    "rel-amazon": [
        "item-churn",
        "item-ltv",
        "review-rating",
        "user-churn",
        "user-item-purchase",
        "user-item-rate",
        "user-item-review",
        "user-ltv",
    ],
    "rel-avito": [
        "ad-ctr",
        "searchinfo-isuserloggedon",
        "searchstream-click",
        "user-ad-visit",
        "user-clicks",
        "user-visits",
    ],
    "rel-event": [
        "event_interest-interested",
        "event_interest-not_interested",
        "user-attendance",
        "user-ignore",
        "user-repeat",
        "users-birthyear",
    ],
    "rel-f1": [
        "driver-circuit-compete",
        "driver-dnf",
        "driver-position",
        "driver-top3",
        "qualifying-position",
        "results-position",
    ],
    "rel-hm": ["item-sales", "transactions-price", "user-churn", "user-item-purchase"],
    "rel-stack": [
        "badges-class",
        "post-post-related",
        "post-votes",
        "user-badge",
        "user-engagement",
        "user-post-comment",
    ],
    "rel-trial": [
        "condition-sponsor-run",
        "eligibilities-adult",
        "eligibilities-child",
        "site-sponsor-run",
        "site-success",
        "studies-enrollment",
        "studies-has_dmc",
        "study-adverse",
        "study-outcome",
    ],
    "rel-arxiv": [
        "author-category",
        "author-publication",
        "paper-citation",
        "paper-paper-cocitation",
    ],
    "rel-salt": [
        "item-incoterms",
        "item-plant",
        "item-shippoint",
        "sales-group",
        "sales-incoterms",
        "sales-office",
        "sales-payterms",
        "sales-shipcond",
    ],
    "rel-ratebeer": [
        "beer-churn",
        "beer_ratings-total_score",
        "brewer-dormant",
        "user-beer-favorite",
        "user-beer-liked",
        "user-churn",
        "user-count",
        "user-place-liked",
    ],
    "rel-mimic": ["patient-iculengthofstay"],
}

REPO_OF: dict[str, str] = {
    name: (V2_REPO if name in ["rel-arxiv", "rel-mimic", "rel-ratebeer", "rel-salt"] else V1_REPO)
    for name in DATASETS
}

#: metric units: auroc_pct, map_pct and accuracy_pct are percentages; nmae lower is better.
SOTA: dict[str, dict] = {
    "rel-amazon/item-churn": {"metric": "auroc_pct", "value": 83.4, "method": "Rel-LLM / RT-ft"},
    "rel-amazon/item-ltv": {
        "metric": "nmae",
        "value": 0.0696,
        "method": "Data Scientist + LightGBM",
    },
    "rel-amazon/review-rating": {
        "metric": "r2",
        "value": -0.356,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-amazon/user-churn": {"metric": "auroc_pct", "value": 71.9, "method": "Rel-LLM"},
    "rel-amazon/user-item-purchase": {
        "metric": "map_pct",
        "value": 2.93,
        "method": "ContextGNN / KumoRFM-ft",
    },
    "rel-amazon/user-item-rate": {
        "metric": "map_pct",
        "value": 2.25,
        "method": "ContextGNN / KumoRFM-ft",
    },
    "rel-amazon/user-item-review": {
        "metric": "map_pct",
        "value": 1.63,
        "method": "ContextGNN / KumoRFM-ft",
    },
    "rel-amazon/user-ltv": {"metric": "nmae", "value": 0.2421, "method": "KumoRFM-2 in-context"},
    "rel-avito/ad-ctr": {
        "metric": "nmae",
        "value": 0.3449,
        "method": "RelAgent (LLM SQL+GBDT agent)",
    },
    "rel-avito/searchinfo-isuserloggedon": {
        "metric": "auroc_pct",
        "value": 73.0,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-avito/searchstream-click": {
        "metric": "auroc_pct",
        "value": 55.92,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-avito/user-ad-visit": {"metric": "map_pct", "value": 4.17, "method": "KumoRFM-ft"},
    "rel-avito/user-clicks": {"metric": "auroc_pct", "value": 69.4, "method": "RGP"},
    "rel-avito/user-visits": {"metric": "auroc_pct", "value": 78.3, "method": "KumoRFM-ft"},
    "rel-event/event_interest-interested": {
        "metric": "auroc_pct",
        "value": 49.57,
        "method": "LightGBM (v2 baseline; GNN 47.6 \u2014 below random)",
    },
    "rel-event/event_interest-not_interested": {
        "metric": "auroc_pct",
        "value": 60.4,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-event/user-attendance": {
        "metric": "nmae",
        "value": 0.3071,
        "method": "KumoRFM-2 (in-context) \u2014 best clean-provenance",
    },
    "rel-event/user-ignore": {"metric": "auroc_pct", "value": 91.2, "method": "PluRel-ft"},
    "rel-event/user-repeat": {"metric": "auroc_pct", "value": 83.6, "method": "GelGT"},
    "rel-event/users-birthyear": {
        "metric": "r2",
        "value": -0.03,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-f1/driver-circuit-compete": {
        "metric": "map_pct",
        "value": 76.18,
        "method": "ID-GNN-4L (v2 baseline)",
    },
    "rel-f1/driver-dnf": {"metric": "auroc_pct", "value": 84.6, "method": "KumoRFM-2 (zero-shot)"},
    "rel-f1/driver-position": {"metric": "nmae", "value": 0.3745, "method": "PluRel-ft"},
    "rel-f1/driver-top3": {"metric": "auroc_pct", "value": 99.6, "method": "KumoRFM-ft"},
    "rel-f1/qualifying-position": {"metric": "r2", "value": 0.239, "method": "RelGT-AC"},
    "rel-f1/results-position": {"metric": "r2", "value": 0.528, "method": "RelGT-AC"},
    "rel-hm/item-sales": {"metric": "nmae", "value": 0.0686, "method": "KumoRFM-ft/-2"},
    "rel-hm/transactions-price": {
        "metric": "r2",
        "value": 0.736,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-hm/user-churn": {"metric": "auroc_pct", "value": 71.2, "method": "KumoRFM-ft"},
    "rel-hm/user-item-purchase": {"metric": "map_pct", "value": 3.14, "method": "KumoRFM-ft"},
    "rel-stack/badges-class": {
        "metric": "accuracy_pct",
        "value": 82.83,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-stack/post-post-related": {"metric": "map_pct", "value": 12.5, "method": "ID-GNN-4L"},
    "rel-stack/post-votes": {"metric": "nmae", "value": 0.1215, "method": "Rel-LLM"},
    "rel-stack/user-badge": {
        "metric": "auroc_pct",
        "value": 94.3,
        "method": "PluRel-ft (outlier \u2014 verify)",
    },
    "rel-stack/user-engagement": {
        "metric": "auroc_pct",
        "value": 95.6,
        "method": "PluRel-ft (outlier \u2014 verify)",
    },
    "rel-stack/user-post-comment": {"metric": "map_pct", "value": 14.0, "method": "RelGNN"},
    "rel-trial/condition-sponsor-run": {
        "metric": "map_pct",
        "value": 11.65,
        "method": "ContextGNN / KumoRFM-ft",
    },
    "rel-trial/eligibilities-adult": {
        "metric": "auroc_pct",
        "value": 93.73,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-trial/eligibilities-child": {
        "metric": "auroc_pct",
        "value": 87.25,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-trial/site-sponsor-run": {
        "metric": "map_pct",
        "value": 28.02,
        "method": "ContextGNN / KumoRFM-ft",
    },
    "rel-trial/site-success": {"metric": "nmae", "value": 0.5519, "method": "RT-ft"},
    "rel-trial/studies-enrollment": {"metric": "r2", "value": 0.436, "method": "RelGT-AC"},
    "rel-trial/studies-has_dmc": {"metric": "auroc_pct", "value": 78.48, "method": "RelGT-AC"},
    "rel-trial/study-adverse": {"metric": "nmae", "value": 0.1097, "method": "RelAgent"},
    "rel-trial/study-outcome": {
        "metric": "auroc_pct",
        "value": 94.6,
        "method": "PluRel-ft (extreme outlier \u2014 verify)",
    },
    "rel-arxiv/author-category": {
        "metric": "accuracy_pct",
        "value": 50.74,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-arxiv/author-publication": {
        "metric": "r2",
        "value": 0.249,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-arxiv/paper-citation": {"metric": "auroc_pct", "value": 82.62, "method": "RelAgent"},
    "rel-arxiv/paper-paper-cocitation": {
        "metric": "map_pct",
        "value": 35.39,
        "method": "ID-GNN (v2 baseline)",
    },
    "rel-salt/item-incoterms": {
        "metric": "accuracy_pct",
        "value": 69.36,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-salt/item-plant": {
        "metric": "accuracy_pct",
        "value": 99.46,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-salt/item-shippoint": {
        "metric": "accuracy_pct",
        "value": 98.39,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-salt/sales-group": {
        "metric": "accuracy_pct",
        "value": 15.76,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-salt/sales-incoterms": {
        "metric": "accuracy_pct",
        "value": 62.23,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-salt/sales-office": {
        "metric": "accuracy_pct",
        "value": 99.88,
        "method": "either baseline",
    },
    "rel-salt/sales-payterms": {
        "metric": "accuracy_pct",
        "value": 37.47,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-salt/sales-shipcond": {
        "metric": "accuracy_pct",
        "value": 56.85,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-ratebeer/beer-churn": {"metric": "auroc_pct", "value": 84.7, "method": "RelAgent"},
    "rel-ratebeer/beer_ratings-total_score": {
        "metric": "r2",
        "value": 0.394,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-ratebeer/brewer-dormant": {"metric": "auroc_pct", "value": 83.33, "method": "RelAgent"},
    "rel-ratebeer/user-beer-favorite": {
        "metric": "map_pct",
        "value": 1.89,
        "method": "ID-GNN (v2 baseline)",
    },
    "rel-ratebeer/user-beer-liked": {
        "metric": "map_pct",
        "value": 1.46,
        "method": "ID-GNN (v2 baseline)",
    },
    "rel-ratebeer/user-churn": {"metric": "auroc_pct", "value": 98.63, "method": "RelAgent"},
    "rel-ratebeer/user-count": {
        "metric": "r2",
        "value": 0.625,
        "method": "GraphSAGE (v2 baseline)",
    },
    "rel-ratebeer/user-place-liked": {
        "metric": "map_pct",
        "value": 1.85,
        "method": "ID-GNN (v2 baseline)",
    },
    "rel-mimic/patient-iculengthofstay": {
        "metric": "auroc_pct",
        "value": 55.01,
        "method": "GraphSAGE (v2 baseline)",
    },
}
