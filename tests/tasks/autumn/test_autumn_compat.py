"""The reference's quirks (tasks/autumn/compat.py): hash order, generator, lazy cells."""

from __future__ import annotations

import pytest

from tasks.autumn import load
from tasks.autumn.compat import HashOrder, lcg_draw, order_of, string_hash


def test_unordered_map_order_of_the_gravity_example():
    names = ["leftButton", "rightButton", "upButton", "downButton", "blobs", "gravity"]
    assert order_of(names) == ["gravity", "blobs", "downButton", "rightButton", "upButton",
                               "leftButton"]


def test_growth_past_13_keys_matches_libstdcxx():
    # Expected orders recorded from a libstdc++ std::unordered_map<std::string, int>.
    table = HashOrder(f"k{i}" for i in range(14))
    assert table.buckets == 29
    assert table.names == "k13 k0 k2 k12 k5 k9 k1 k6 k3 k4 k7 k8 k10 k11".split()


def test_growth_past_29_keys_matches_libstdcxx():
    table = HashOrder(f"var{i}" for i in range(30))
    assert table.buckets == 59
    assert table.names == (
        "var29 var12 var4 var8 var20 var11 var7 var9 var6 var22 var3 var14 var10 var1 var5 "
        "var0 var25 var27 var13 var2 var26 var16 var21 var17 var23 var15 var18 var19 var28 "
        "var24").split()


@pytest.mark.parametrize("count, buckets", [(1, 13), (13, 13), (14, 29), (29, 29), (30, 59),
                                            (60, 127), (128, 257), (258, 541)])
def test_bucket_growth(count, buckets):
    assert HashOrder(f"n{i}" for i in range(count)).buckets == buckets


def test_string_hash_is_deterministic_64_bit():
    assert string_hash("gravity") == string_hash("gravity")
    assert 0 <= string_hash("a" * 20) < 2 ** 64
    assert string_hash("") != string_hash("a")


def test_erasing_keeps_the_others_in_order():
    table = HashOrder(["a", "b", "c"])
    before = list(table.names)
    table.erase("b")
    assert table.names == [n for n in before if n != "b"]


def test_inserts_and_erases_match_a_plain_model_of_the_linked_list():
    """HashOrder finds where a key goes from each bucket's first key; the model below
    scans the whole list as libstdc++ walks it (a key goes before the first key of its
    bucket, else to the front; growth re-inserts front to back)."""
    import random

    from tasks.autumn.compat import BUCKET_COUNTS

    def model_place(names, name, buckets):
        for i, other in enumerate(names):
            if string_hash(other) % buckets == string_hash(name) % buckets:
                names.insert(i, name)
                return
        names.insert(0, name)

    rng = random.Random(7)
    for _ in range(30):
        table, names, buckets = HashOrder(), [], 0
        for _ in range(rng.randrange(1, 400)):
            name = f"v{rng.randrange(300)}"
            if rng.random() < 0.2:
                table.erase(name)
                if name in names:
                    names.remove(name)
            elif name not in names:
                table.insert(name)
                if len(names) + 1 > buckets:
                    buckets = next(b for b in BUCKET_COUNTS if b >= len(names) + 1 and b > buckets)
                    old, names = names, []
                    for kept in old:
                        model_place(names, kept, buckets)
                model_place(names, name, buckets)
            copy = table.copy()  # a step's snapshot: either may go on
            assert copy.names == table.names == names
            table = copy if rng.random() < 0.5 else table
        assert table.buckets == buckets


def test_next_expressions_run_in_hash_order_not_program_order():
    # log records the NEXT evaluation order; gravity runs first although declared last.
    env = load('(program (= log (list))'
               ' (= leftButton (initnext 0 (let (= log (addObj log (list "leftButton"))) 0)))'
               ' (= blobs (initnext 0 (let (= log (addObj log (list "blobs"))) 0)))'
               ' (= gravity (initnext 0 (let (= log (addObj log (list "gravity"))) 0))))')
    env.reset(0)
    env.step("noop")
    assert env.value("log") == [n for n in order_of(["leftButton", "blobs", "gravity"])]
    assert env.value("log")[0] == "gravity"


def test_generator_seed_zero_draws_only_zeros():
    state, draws = 0, []
    for n in (2, 5, 100, 7):
        value, state = lcg_draw(state, n)
        draws.append(value)
    assert draws == [0, 0, 0, 0]


def test_generator_sequence_from_seed_one():
    env = load("(program (= x 0))")
    env.reset(1)
    assert [env.evaluate("(uniformChoice (range 0 100))") for _ in range(4)] == [71, 94, 82, 27]
    assert env.random_state() == 1277933827 or env.random_state() > 0


def test_lazy_cell_colour_follows_the_field():
    env = load('(program (= GRID_SIZE 2) (object L (: on Bool) (Cell 0 0 (if on then "gold" else "gray")))'
               ' (= l (initnext (L true (Position 0 0)) (prev l)))'
               ' (on clicked (= l (updateObj l "on" (! (.. l on))))))')
    assert env.reset(0).frame[0][0] == "gold"
    assert env.step("click 1 1").frame[0][0] == "gray"


def test_lazy_cell_position_given_by_a_field_moves_with_it():
    env = load('(program (= GRID_SIZE 4) (object B (: k Number) (Cell k 0 "red"))'
               ' (= b (initnext (B 0 (Position 0 0)) (updateObj (prev b) "k" (+ (.. (prev b) k) 1)))))')
    env.reset(0)
    assert env.step("noop").frame[0] == ["black", "red", "black", "black"]


def test_cell_index_from_map_is_frozen_and_a_global_colour_is_snapshotted():
    env = load('(program (= GRID_SIZE 3) (= hue "red")'
               ' (object Row (map (--> i (Cell i 0 hue)) (range 0 3)))'
               ' (= row (initnext (Row (Position 0 0)) (prev row)))'
               ' (on clicked (= hue "blue")))')
    assert env.reset(0).frame[0] == ["red"] * 3
    assert env.step("click 0 0").frame[0] == ["red"] * 3


def test_a_bare_name_in_a_cell_is_its_snapshot_first_then_the_field():
    env = load('(program (= GRID_SIZE 2) (= hue "red")'
               ' (object A (: hue String) (Cell 0 0 hue))'
               ' (object B (: tint String) (Cell 1 0 tint))'
               ' (= a (initnext (A "blue" (Position 0 0)) (prev a)))'
               ' (= b (initnext (B "gold" (Position 0 0)) (prev b)))'
               ' (on clicked (= b (updateObj b "tint" "green"))))')
    assert env.reset(0).frame[0] == ["red", "gold"]
    assert env.step("click 0 0").frame[0] == ["red", "green"]


def test_number_bool_comparison_is_one_sided():
    env = load("(program (= x 0))")
    assert env.evaluate("(== 1 true)") is True
    assert env.evaluate("(== true 1)") is False


def test_objects_built_apart_are_unequal_but_a_copy_is_equal():
    env = load('(program (object D (Cell 0 0 "red")) (= d (D (Position 0 0))))')
    assert env.evaluate("(== d (D (Position 0 0)))") is False
    assert env.evaluate('(== d (updateObj d "origin" (Position 0 0)))') is True
