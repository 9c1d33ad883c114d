"""Generate the retail example's landing zone: CRM customers, ERP products, POS orders and order lines.

The output is deterministic (fixed seeds) and committed, so the demo needs no generation step. Re-run after
changing this script:  .venv/bin/python examples/retail/generate_landing.py

The files look like what real source systems drop into a landing zone, including the usual defects, so that
the bronze and silver contracts have something to quarantine:

* crm customers (CSV, two daily files): bad e-mails, missing required values, unparseable dates, unknown
  country codes, messy case/whitespace, duplicate ids (a later update of the same customer), and a second-day
  file with changed segments/countries (new SCD2 versions in gold) and new customers.
* erp products (CSV, one full export): negative and unparseable prices, unknown categories, missing names,
  mixed boolean spellings.
* pos orders (JSON lines, two daily files): negative amounts, unknown and misspelt statuses, unparseable
  timestamps, orders of unknown customers, missing ids, extra columns, and a malformed JSON line per file.
* pos order lines (JSON lines): zero/negative quantities, unknown products, discounts out of range.
"""

from __future__ import annotations

import csv
import json
import random
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from faker import Faker

SEED = 20261101
LANDING = Path(__file__).resolve().parent / "landing"
DAY1 = date(2026, 11, 1)
DAY2 = date(2026, 11, 2)

N_CUSTOMERS = 300
N_PRODUCTS = 120
N_ORDERS_PER_DAY = 300

COUNTRIES = ["DE", "FR", "NL", "GB", "ES", "IT", "US", "SE"]
SEGMENTS = ["consumer", "small_business", "enterprise"]
CATEGORIES = ["grocery", "household", "electronics", "apparel", "beauty", "toys"]
STATUSES = ["placed", "paid", "shipped", "delivered", "cancelled", "returned"]
CHANNELS = ["store", "web", "app"]
PRODUCT_WORDS = {
    "grocery": ["Oat Milk", "Espresso Beans", "Basmati Rice", "Olive Oil", "Dark Chocolate", "Granola"],
    "household": ["Dish Soap", "Paper Towels", "Laundry Pods", "Trash Bags", "Sponge Pack", "Glass Cleaner"],
    "electronics": ["USB-C Cable", "Earbuds", "Power Bank", "Smart Plug", "Desk Lamp", "Webcam"],
    "apparel": ["Wool Socks", "Rain Jacket", "Cotton Tee", "Beanie", "Running Shorts", "Hoodie"],
    "beauty": ["Face Cream", "Lip Balm", "Shampoo", "Sun Screen", "Hand Soap", "Body Lotion"],
    "toys": ["Puzzle 500", "Building Blocks", "Plush Bear", "Card Game", "Kite", "Model Car"],
}
BRANDS = ["Nordic", "Acme", "Everyday", "Urban", "Green Leaf", "Bright", "Tiny Tots", "Pure"]

CUSTOMER_COLUMNS = [
    "customer_id",
    "first_name",
    "last_name",
    "email",
    "phone",
    "country",
    "segment",
    "signup_date",
    "updated_at",
]
PRODUCT_COLUMNS = ["product_id", "sku", "name", "category", "list_price", "currency", "active", "updated_at"]


@dataclass
class Generator:
    """Holds the seeded random sources so every file is reproducible."""

    rng: random.Random = field(default_factory=lambda: random.Random(SEED))
    fake: Faker = field(default_factory=lambda: Faker(["en_GB", "de_DE", "fr_FR", "nl_NL"]))

    def __post_init__(self) -> None:
        self.fake.seed_instance(SEED)

    def chance(self, probability: float) -> bool:
        return self.rng.random() < probability

    def timestamp(self, day: date, *, hour_from: int = 6, hour_to: int = 22) -> str:
        moment = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(
            seconds=self.rng.randrange(hour_from * 3600, hour_to * 3600)
        )
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# --- customers -------------------------------------------------------------------------------------------


def _clean_customer(gen: Generator, number: int, day: date) -> dict[str, Any]:
    first, last = gen.fake.first_name(), gen.fake.last_name()
    user = f"{first}.{last}".lower().replace(" ", "").replace("'", "")
    user = "".join(ch for ch in user if ch.isascii() and (ch.isalnum() or ch == "."))
    return {
        "customer_id": f"C{number:05d}",
        "first_name": first,
        "last_name": last,
        "email": f"{user}{number}@{gen.rng.choice(['example.com', 'mail.example.org', 'shop.example.net'])}",
        "phone": gen.fake.numerify("+## ### ### ####"),
        "country": gen.rng.choice(COUNTRIES),
        "segment": gen.rng.choices(SEGMENTS, weights=[70, 22, 8])[0],
        "signup_date": (day - timedelta(days=gen.rng.randrange(30, 2000))).isoformat(),
        "updated_at": gen.timestamp(day, hour_from=0, hour_to=6),
    }


def _damage_customer(gen: Generator, row: dict[str, Any]) -> None:
    """Apply at most one realistic defect (and sometimes cosmetic mess that silver cleans up)."""
    roll = gen.rng.random()
    if roll < 0.03:
        row["email"] = gen.rng.choice(
            [row["email"].replace("@", ""), row["email"].split("@")[0] + "@", "n/a", "john doe@example.com"]
        )
    elif roll < 0.05:
        row["email"] = ""  # required
    elif roll < 0.06:
        row["customer_id"] = ""  # required key missing
    elif roll < 0.08:
        row["signup_date"] = gen.rng.choice(["31/02/2024", "2024-13-07", "last tuesday", "2023-02-30"])
    elif roll < 0.09:
        row["country"] = gen.rng.choice(["XX", "Germany", "U.S."])
    # cosmetic mess: case and whitespace that trim/lower/upper fix in silver
    if gen.chance(0.15):
        row["email"] = f"  {row['email'].upper()} "
    if gen.chance(0.10):
        row["segment"] = f" {row['segment'].title()}"
    if gen.chance(0.05):
        row["country"] = row["country"].lower()


def customers(gen: Generator) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """Day-1 full extract, day-2 delta extract, and the valid customer ids (for orders)."""
    day1: list[dict[str, Any]] = []
    for number in range(1, N_CUSTOMERS + 1):
        row = _clean_customer(gen, number, DAY1)
        _damage_customer(gen, row)
        day1.append(row)
    # duplicate ids: a second, later record of the same customer in the same extract (silver keeps the latest)
    for original in gen.rng.sample(day1[:200], 8):
        if not original["customer_id"]:
            continue
        later = dict(original)
        later["phone"] = gen.fake.numerify("+## ### ### ####")
        later["updated_at"] = gen.timestamp(DAY1, hour_from=7, hour_to=20)
        day1.insert(gen.rng.randrange(len(day1)), later)

    day2: list[dict[str, Any]] = []
    # changes that open new SCD2 versions in gold_dim_customers
    for original in gen.rng.sample(day1[:N_CUSTOMERS], 30):
        if not original["customer_id"]:
            continue
        changed = _clean_customer(gen, int(original["customer_id"][1:]), DAY2)
        changed.update(
            first_name=original["first_name"],
            last_name=original["last_name"],
            email=original["email"].strip().lower() or changed["email"],
            signup_date=original["signup_date"],
        )
        if gen.chance(0.5):
            old_segment = original["segment"].strip().lower()
            changed["segment"] = gen.rng.choice([s for s in SEGMENTS if s != old_segment])
        else:
            changed["country"] = gen.rng.choice([c for c in COUNTRIES if c != original["country"].upper()])
        day2.append(changed)
    for number in range(N_CUSTOMERS + 1, N_CUSTOMERS + 16):
        row = _clean_customer(gen, number, DAY2)
        _damage_customer(gen, row)
        day2.append(row)
    valid = sorted({r["customer_id"] for r in day1 + day2 if r["customer_id"]})
    return day1, day2, valid


# --- products --------------------------------------------------------------------------------------------


def products(gen: Generator) -> tuple[list[dict[str, Any]], dict[str, float]]:
    rows: list[dict[str, Any]] = []
    prices: dict[str, float] = {}
    for number in range(1, N_PRODUCTS + 1):
        category = CATEGORIES[number % len(CATEGORIES)]
        price = round(gen.rng.uniform(0.79, 12.0) * (8 if category == "electronics" else 1), 2)
        product_id = f"P{number:05d}"
        prices[product_id] = price
        row: dict[str, Any] = {
            "product_id": product_id,
            "sku": f"{category[:3].upper()}-{gen.rng.randrange(100000, 999999)}",
            "name": f"{gen.rng.choice(BRANDS)} {gen.rng.choice(PRODUCT_WORDS[category])}",
            "category": category,
            "list_price": f"{price:.2f}",
            "currency": "EUR",
            "active": gen.rng.choice(["true", "true", "true", "yes", "1", "false", "no"]),
            "updated_at": gen.timestamp(DAY1, hour_from=0, hour_to=5),
        }
        roll = gen.rng.random()
        if roll < 0.02:
            row["list_price"] = f"-{row['list_price']}"
        elif roll < 0.03:
            row["list_price"] = row["list_price"].replace(".", ",")  # European decimal comma: unparseable
        elif roll < 0.05:
            row["category"] = gen.rng.choice(["garden", "Misc", "tbd"])
        elif roll < 0.06:
            row["name"] = ""
        rows.append(row)
    return rows, prices


# --- orders ----------------------------------------------------------------------------------------------


def _order_lines(gen: Generator, order_id: str, prices: dict[str, float]) -> list[dict[str, Any]]:
    lines = []
    for line_no in range(1, gen.rng.choice([1, 1, 2, 2, 3, 4]) + 1):
        product_id = gen.rng.choice(sorted(prices))
        line: dict[str, Any] = {
            "order_id": order_id,
            "line_no": line_no,
            "product_id": product_id,
            "quantity": gen.rng.choice([1, 1, 1, 2, 2, 3, 5]),
            "unit_price": prices[product_id],
            "discount_pct": gen.rng.choice([0, 0, 0, 5, 10, 20]),
        }
        roll = gen.rng.random()
        if roll < 0.01:
            line["quantity"] = gen.rng.choice([0, -1])
        elif roll < 0.02:
            line["product_id"] = "P09999"  # not in the product master
        elif roll < 0.025:
            line["discount_pct"] = 150
        elif roll < 0.03:
            line["product_id"] = None
        lines.append(line)
    return lines


def _line_total(line: dict[str, Any]) -> float:
    return float(line["quantity"]) * float(line["unit_price"]) * (1 - float(line["discount_pct"]) / 100)


def orders(
    gen: Generator, day: date, first_number: int, customer_ids: list[str], prices: dict[str, float]
) -> tuple[list[str], list[dict[str, Any]]]:
    """One day of POS orders as JSON lines (text, so a malformed line can be included) and their lines."""
    text_lines: list[str] = []
    all_lines: list[dict[str, Any]] = []
    for number in range(first_number, first_number + N_ORDERS_PER_DAY):
        order_id = f"O{number:06d}"
        lines = _order_lines(gen, order_id, prices)
        all_lines.extend(lines)
        channel = gen.rng.choices(CHANNELS, weights=[50, 35, 15])[0]
        order: dict[str, Any] = {
            "order_id": order_id,
            "customer_id": gen.rng.choice(customer_ids),
            "order_ts": gen.timestamp(day),
            "status": gen.rng.choices(STATUSES, weights=[10, 15, 25, 40, 6, 4])[0],
            "amount": round(sum(_line_total(line) for line in lines), 2),
            "currency": "EUR",
            "channel": channel,
            "store_id": f"S{gen.rng.randrange(1, 25):03d}" if channel == "store" else None,
        }
        roll = gen.rng.random()
        if roll < 0.015:
            order["amount"] = -order["amount"]
        elif roll < 0.03:
            order["status"] = gen.rng.choice(["lost", "??", "on_hold"])
        elif roll < 0.04:
            order["order_ts"] = gen.rng.choice(["2026-11-31 25:00", "11/05/2026 10:00", "yesterday"])
        elif roll < 0.055:
            order["customer_id"] = f"C{gen.rng.randrange(90000, 99999):05d}"  # unknown customer
        elif roll < 0.06:
            order["order_id"] = None
        # spelling and case variants silver normalises (map_values, trim, lower)
        if gen.chance(0.05):
            order["status"] = "canceled" if order["status"] == "cancelled" else f" {order['status'].upper()}"
        # extra columns some POS terminals send: bronze keeps them, silver drops them
        if gen.chance(0.1):
            order["coupon_code"] = gen.rng.choice(["WELCOME10", "BF2026", "STAFF"])
        if channel == "app" and gen.chance(0.5):
            order["device"] = gen.rng.choice(["ios", "android"])
        text_lines.append(json.dumps(order, separators=(",", ":")))
    # a truncated record, as written by a terminal that lost power mid-write
    broken_at = gen.rng.randrange(10, len(text_lines) - 10)
    text_lines.insert(broken_at, text_lines[broken_at][: len(text_lines[broken_at]) // 2])
    return text_lines, all_lines


# --- output ----------------------------------------------------------------------------------------------


def _write_csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def _write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def write_landing(landing: Path = LANDING) -> list[Path]:
    """Write every landing file under ``landing``; return the files written."""
    gen = Generator()
    day1_customers, day2_customers, customer_ids = customers(gen)
    product_rows, prices = products(gen)
    for day, rows in ((DAY1, day1_customers), (DAY2, day2_customers)):
        _write_csv(landing / "crm" / "customers" / f"customers_{day:%Y-%m-%d}.csv", CUSTOMER_COLUMNS, rows)
    _write_csv(landing / "erp" / "products" / f"products_{DAY1:%Y-%m-%d}.csv", PRODUCT_COLUMNS, product_rows)
    first_number = 1
    for day in (DAY1, DAY2):
        order_text, lines = orders(gen, day, first_number, customer_ids, prices)
        first_number += N_ORDERS_PER_DAY
        _write_lines(landing / "pos" / "orders" / f"orders_{day:%Y-%m-%d}.jsonl", order_text)
        _write_lines(
            landing / "pos" / "order_lines" / f"order_lines_{day:%Y-%m-%d}.jsonl",
            [json.dumps(line, separators=(",", ":")) for line in lines],
        )
    return sorted(landing.rglob("*.*"))


def main() -> None:
    for path in write_landing():
        print(f"{path.relative_to(LANDING.parent)}: {sum(1 for _ in path.open(encoding='utf-8'))} lines")


if __name__ == "__main__":
    main()
