"""The relation graph: graph, link, decide, dedup, the near-copy note, hygiene and verify's
relation counts, on both backends."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tests.conftest import ServiceFactory, store_state

from retain import errors, graph
from retain.chrono import ManualClock
from retain.config import Settings
from retain.graph_results import DedupResult
from retain.model import Status
from retain.results import WriteRequest
from retain.service import MemoryService
from retain.storage.base import Described, MemoryFilter
from retain.storage.words import DESCRIPTION_COMMON, rarest

ALICE = "Alice works in the UTC+8 time zone"


@pytest.fixture
def world(make_service: ServiceFactory) -> dict[str, MemoryService]:
    """An operator, the steward, an application, two registered agents and a project."""
    operator = make_service()
    operator.add_agent("planner")
    operator.add_agent("coder")
    operator.add_project("web")
    return {
        "operator": operator,
        "steward": make_service(principal="steward"),
        "app": make_service(principal="app:records"),
        "planner": make_service(principal="agent:planner"),
        "coder": make_service(principal="agent:coder"),
    }


def pairs_of(result: DedupResult) -> set[frozenset[str]]:
    return {frozenset((p.first.id, p.second.id)) for p in result.pairs}


# -- similar_to: found by the machine, within one scope -----------------------------------


def test_dedup_links_a_near_copy_and_lists_both_sides(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    first = operator.write("alice-tz", description=ALICE).memory
    second = operator.write("alice-zone", description="Alice is in the UTC+8 time zone").memory
    operator.write("deploys", description="Deploys go out on Tuesdays after the review")

    found = world["steward"].dedup()

    assert pairs_of(found) == {frozenset((first.id, second.id))}
    (pair,) = found.pairs
    assert pair.new and pair.relation.type == graph.SIMILAR_TO and pair.relation.open
    assert pair.score >= graph.THRESHOLD and found.linked == 1 and found.compared == 3
    assert pair.relation.principal == "steward"
    assert found.receipt is not None
    again = operator.dedup()  # still open: listed again, linked once
    assert pairs_of(again) == pairs_of(found) and again.linked == 0 and not again.pairs[0].new


def test_similar_to_never_crosses_a_scope_or_an_identity(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    world["planner"].remember(ALICE)
    world["coder"].remember(ALICE)
    operator.write("alice-tz", description=ALICE)
    operator.write("alice-tz", description=ALICE, project="web", tier="project")

    assert operator.dedup().pairs == ()  # four copies, each alone in its scope
    assert world["steward"].dedup(threshold=0.1).pairs == ()
    mine = world["planner"].remember(ALICE + ", mostly")
    assert {p.first.scope for p in operator.dedup().pairs} == {"agent:planner"}
    assert mine.id in {i for pair in pairs_of(operator.dedup()) for i in pair}


def test_a_changed_detail_lowers_the_score_and_is_named(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    operator.write("alice-tz", description=ALICE)
    operator.write("alice-tz9", description="Alice works in the UTC+9 time zone")

    (pair,) = operator.dedup(threshold=0.3).pairs
    assert pair.score == pytest.approx(pair.cosine - graph.DETAIL_PENALTY)
    assert set(pair.differs) == {("+8",), ("+9",)}


def test_a_decided_pair_is_not_proposed_again(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    a = operator.write("alice-tz", description=ALICE).memory
    b = operator.write("alice-zone", description="Alice is in the UTC+8 time zone").memory
    operator.dedup()
    kept = operator.decide(a.id, "keep", target=b.id, reason="one is the team's, one hers")
    assert kept.relation.decision == "keep" and not kept.relation.open
    assert operator.dedup().pairs == ()


def test_keep_before_any_pass_is_remembered(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    a = operator.write("alice-tz", description=ALICE).memory
    b = operator.write("alice-zone", description="Alice is in the UTC+8 time zone").memory
    operator.decide("alice-tz", "keep", target="alice-zone")
    assert operator.dedup().pairs == ()
    (edge,) = [e for e in operator.graph(a.id).edges if e.relation is not None]
    assert (edge.type, edge.other and edge.other.id, edge.relation.decision) == (
        graph.SIMILAR_TO, b.id, "keep",
    )  # fmt: skip


def test_dedup_refuses_a_threshold_out_of_range(world: dict[str, MemoryService]) -> None:
    for bad in (0, 1.5, -0.2, True):
        with pytest.raises(errors.InvalidValue):
            world["operator"].dedup(threshold=bad)  # type: ignore[arg-type]


def test_dedup_reports_progress_and_keeps_to_a_project(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    operator.write("a", description=ALICE, project="web", tier="project")
    operator.write(
        "b", description="Alice is in the UTC+8 time zone", project="web", tier="project"
    )
    operator.write("c", description=ALICE)
    operator.write("d", description="Alice is in the UTC+8 time zone")
    seen: list[tuple[str, int, int]] = []
    found = operator.dedup(project="web", progress=lambda *step: seen.append(step))
    assert {p.first.scope for p in found.pairs} == {"project:web"} and found.compared == 2
    assert ("compare", 2, 2) in seen and seen[0][0] == "embed"
    with pytest.raises(errors.ProjectNotFound):
        operator.dedup(project="nowhere")


# -- graph ----------------------------------------------------------------------------


def test_graph_of_an_unknown_id_fails_loudly(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    operator.write("alice-tz", description=ALICE)
    for unknown in ("01ZZZZZZZZZZZZZZZZZZZZZZZZ", "no-such-memory"):
        with pytest.raises(errors.NotFound):
            operator.graph(unknown)
    lone = operator.graph("alice-tz")
    assert lone.edges == () and lone.to_dict()["outgoing"] == []


def test_graph_does_not_disclose_what_the_reader_cannot_see(
    world: dict[str, MemoryService],
) -> None:
    mine = world["planner"].remember(ALICE)
    with pytest.raises(errors.NotFound):
        world["coder"].graph(mine.id)
    shared = world["operator"].write("alice-tz", description=ALICE + " now").memory
    world["operator"].link(shared.id, mine.id, "similar_to")
    assert [e.other.id for e in world["planner"].graph(shared.id).edges if e.other] == [mine.id]
    assert world["coder"].graph(shared.id).edges == ()


def test_graph_reads_references_versions_and_their_reverse(
    world: dict[str, MemoryService],
) -> None:
    operator = world["operator"]
    host = operator.write("deploy-host", description="The deploy host is bastion-2").memory
    runbook = operator.write(
        "runbook", description="How to deploy", references=["deploy-host", "wiki/ops/deploy"]
    ).memory
    out = operator.graph("runbook").to_dict()["outgoing"]
    assert [(e["type"], e["id"], e["reference"]) for e in out] == [
        ("references", host.id, "deploy-host"),
        ("references", None, "wiki/ops/deploy"),  # names no memory: shown bare
    ]
    incoming = operator.graph("deploy-host").to_dict()["incoming"]
    assert [(e["type"], e["id"]) for e in incoming] == [("references", runbook.id)]

    old = operator.fact_write("alice", "timezone", "UTC+8").fact
    new = operator.fact_write("alice", "timezone", "UTC+9").fact
    assert [(e.type, e.out, e.other and e.other.id) for e in operator.graph(new.id).edges] == [
        (graph.SUPERSEDES, True, old.id)
    ]
    assert [(e.type, e.out) for e in operator.graph(old.id).edges] == [(graph.SUPERSEDES, False)]


# -- supersede and contradict: explicit acts only ------------------------------------------


def test_supersede_keeps_the_older_readable_with_its_pointer(
    world: dict[str, MemoryService], clock: ManualClock
) -> None:
    operator = world["operator"]
    old = operator.write("alice-tz", description=ALICE).memory
    clock.advance(minutes=1)
    new = operator.write("alice-zone", description="Alice is in the UTC+9 time zone").memory

    done = world["steward"].decide("alice-tz", "supersede", target=new.id, reason="she moved")

    assert done.relation.type == graph.SUPERSEDES
    assert (done.relation.source, done.relation.target) == (new.id, old.id)
    assert done.target.status is Status.SUPERSEDED and done.target.superseded_by == new.id
    record = operator.get("alice-tz").memory
    assert (record.status, record.superseded_by) == (Status.SUPERSEDED, new.id)
    assert [h.memory.id for h in operator.search("Alice time zone").hits] == [new.id]
    kinds = [e.kind for e in operator.events(memory_id=old.id)]
    assert kinds[-1] == "supersede"
    assert "relate" in [e.kind for e in operator.events(memory_id=new.id)]
    assert done.receipt is not None
    with pytest.raises(errors.NotActive) as again:
        operator.decide(old.id, "supersede", target=new.id)
    assert again.value.details["status"] == "superseded"


def test_a_link_of_supersedes_is_the_same_decision(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    old = operator.write("alice-tz", description=ALICE).memory
    new = operator.write("alice-zone", description="Alice is in the UTC+9 time zone").memory
    operator.link(new.id, old.id, "supersedes", reason="newer")
    assert operator.get("alice-tz").memory.superseded_by == new.id


def test_contradicts_raises_a_conflict_signal_the_gate_reports(
    world: dict[str, MemoryService],
) -> None:
    operator = world["operator"]
    a = operator.fact_write("alice", "timezone", "UTC+8").fact
    b = operator.fact_write("alice", "timezone", "UTC+9", project="web").fact
    assert not [c for c in operator.gate("alice", "timezone").conflicts]

    made = world["steward"].link(a.id, b.id, "contradicts", reason="which is it?")

    assert made.relation.open and made.conflict is not None and made.conflict.active
    answer = operator.gate("alice", "timezone")
    assert answer.contested
    assert [(c.entity, c.topic, c.store, c.reason) for c in answer.conflicts] == [
        ("alice", "timezone", "knowledge_graph", "which is it?")
    ]
    settled = operator.decide(b.id, "keep", target=a.id, reason="both hold: two offices")
    assert settled.conflict is not None and not settled.conflict.active
    assert operator.gate("alice", "timezone").conflicts == []


def test_a_notes_contradiction_is_gated_under_its_name(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    operator.write("deploy-day", description="Deploys go out on Tuesdays")
    operator.write("deploy-friday", description="Deploys go out on Fridays")
    operator.decide("deploy-day", "contradict", target="deploy-friday")
    assert operator.gate("deploy-day", "contradicts").contested
    operator.decide("deploy-day", "supersede", target="deploy-friday")
    assert not operator.gate("deploy-day", "contradicts").contested


def test_only_an_explicit_act_makes_supersedes_or_contradicts(
    world: dict[str, MemoryService],
) -> None:
    operator = world["operator"]
    operator.write("alice-tz", description=ALICE)
    operator.write("alice-tz9", description="Alice works in the UTC+9 time zone")
    operator.write("alice-zone", description="Alice is in the UTC+8 time zone")
    world["steward"].dedup(threshold=0.3)
    counts = operator.verify().relations
    assert counts[graph.SIMILAR_TO] > 0
    assert counts[graph.SUPERSEDES] == counts[graph.CONTRADICTS] == 0
    for agent in ("planner", "coder"):
        with pytest.raises(errors.AccessDenied):
            world[agent].link("alice-tz", "alice-tz9", "contradicts")
        with pytest.raises(errors.AccessDenied):
            world[agent].decide("alice-tz", "supersede", target="alice-tz9")
    with pytest.raises(errors.AccessDenied):
        world["app"].decide("alice-tz", "supersede", target="alice-tz9")


@pytest.mark.parametrize(
    ("source", "target", "kind", "error"),
    [
        ("alice-tz", "alice-tz", "similar_to", errors.InvalidValue),
        ("alice-tz", "deploys", "references", errors.InvalidValue),
        ("alice-tz", "deploys", "friend_of", errors.InvalidValue),
        ("alice-tz", "nowhere", "similar_to", errors.NotFound),
        ("alice-tz", "", "similar_to", errors.InvalidValue),
    ],
)
def test_a_bad_link_is_refused_with_nothing_written(
    world: dict[str, MemoryService], source: str, target: str, kind: str, error: type
) -> None:
    operator = world["operator"]
    operator.write("alice-tz", description=ALICE)
    operator.write("deploys", description="Deploys go out on Tuesdays")
    before = store_state(operator)
    with pytest.raises(error):
        operator.link(source, target, kind)
    with pytest.raises(errors.InvalidValue):
        operator.decide(source, "merge", target="deploys")
    assert store_state(operator) == before


def test_a_link_that_stands_changes_nothing(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    operator.write("a", description="one")
    operator.write("b", description="two")
    first = operator.link("a", "b", "derived_from", reason="b came first")
    again = operator.link("a", "b", "derived_from")
    assert first.changed and not again.changed and again.receipt is None
    assert again.relation.id == first.relation.id


def test_a_deleted_memory_takes_its_edges_and_a_forgotten_one_their_reasons(
    world: dict[str, MemoryService],
) -> None:
    operator = world["operator"]
    operator.write("a", description="one")
    operator.write("b", description="two")
    operator.write("c", description="three")
    operator.link("a", "b", "similar_to", reason="alpha bravo secret words")
    operator.link("a", "c", "derived_from", reason="charlie words")
    operator.delete("b")
    assert [e.type for e in operator.graph("a").edges] == [graph.DERIVED_FROM]
    operator.forget("c", reason="asked")
    (edge,) = operator.graph("a").edges
    assert edge.relation is not None and edge.relation.reason == ""


# -- the near-copy note of a write ------------------------------------------------------------


def test_a_near_copy_in_the_same_batch_is_noted(world: dict[str, MemoryService]) -> None:
    results = world["operator"].write_many(
        [
            WriteRequest("alice-tz", description=ALICE),
            WriteRequest("deploys", description="Deploys go out on Tuesdays"),
            WriteRequest("alice-zone", description="Alice is in the UTC+8 time zone"),
        ]
    )
    assert results[0].notes == () and results[1].notes == ()
    assert any("'alice-tz', written in the same batch" in n for n in results[2].notes)


def test_a_near_copy_moved_later_in_its_batch_is_named_where_it_was_left(
    world: dict[str, MemoryService],
) -> None:
    results = world["operator"].write_many(
        [
            WriteRequest("alice-tz", description=ALICE),
            WriteRequest("alice-tz", tier="project", project="web"),  # moved, not redescribed
            WriteRequest(
                "alice-zone", description="Alice is in the UTC+8 time zone", project="web"
            ),
        ]
    )
    assert any("'web/alice-tz', written in the same batch" in n for n in results[2].notes)


def test_a_reworded_near_copy_is_noted_by_its_vector(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    operator.write("alice-tz", description=ALICE)
    result = operator.write("alice-zone", description="Alice is on UTC+8 hours")
    assert any("'alice-tz' already says something very similar" in n for n in result.notes)
    changed = operator.write("alice-tz9", description="Alice works in the UTC+9 time zone")
    assert changed.created  # noted or not, never blocked


def test_a_near_copy_with_another_body_is_noted_among_nearer_vectors(
    world: dict[str, MemoryService],
) -> None:
    # The note looks a description's rarest words up, on both backends: a memory whose long
    # body takes its stored vector far from a new description is found all the same, among
    # short descriptions whose vectors are nearer it.
    operator = world["operator"]
    body = " ".join(["The office coffee machine on the third floor needs descaling."] * 8)
    operator.write("alice-tz", description=ALICE, body=body)
    things = ["tea", "chess", "cycling", "jazz", "hiking", "sushi", "poetry", "running"]
    requests = [WriteRequest(f"alice-{t}", description=f"Alice likes {t} at work") for t in things]
    requests += [
        WriteRequest(f"alice-{t}-too", description=f"Alice works with {t}") for t in things
    ]
    operator.write_many(requests, notes=False)
    result = operator.write_many(
        [WriteRequest("alice-zone", description="Alice works in the UTC+8 time zone now")]
    )
    assert any("'alice-tz'" in n for n in result[0].notes), result[0].notes


def test_description_lookups_answer_each_list_newest_first(
    world: dict[str, MemoryService],
) -> None:
    operator = world["operator"]
    kestrels = [
        operator.write(f"k{i}", description=f"A kestrel seen by the river, number {i}").memory.id
        for i in range(6)
    ]
    heron = operator.write("heron", description="A heron by the lake", body="kestrel").memory.id
    operator.write("kestrel-body", description="Nothing here", body="kestrel river")
    everywhere = MemoryFilter(realm=operator.realm)
    asked = [["kestrel", "river", "number", "0"], ["heron"], ["kestrel"], ["nowhere"], []]

    def looked(where: MemoryFilter, fewest: int) -> list[list[str]]:
        found = operator.backend.read(
            lambda tx: tx.lookup_descriptions(where, asked, limit=3, fewest=fewest)
        )
        return [[d.id for d in rows] for rows in found]

    newest = kestrels[::-1][:3]
    # "0" is the rarest (one description holds it) unless a word needs two holders
    assert looked(everywhere, 1) == [[kestrels[0]], [heron], newest, [], []]
    assert looked(everywhere, 2) == [newest, [], newest, [], []]
    assert looked(everywhere, 7) == [[], [], [], [], []]
    only_web = MemoryFilter(realm=operator.realm, scopes=("project:web",))
    assert looked(only_web, 1) == [[]] * 5


def test_a_description_lookup_gives_what_the_note_weighs_of_each_row(
    make_service: ServiceFactory,
) -> None:
    operator = make_service()
    operator.add_project("web")
    operator.add_agent("ada")
    heron = operator.write("heron", description="A heron by the lake", project="web").memory
    held = make_service(principal="agent:ada", settings=Settings(llm_writes="quarantined"))
    tip = held.remember("A heron nests by the lake").id
    everywhere = MemoryFilter(realm=operator.realm, statuses=("active", "quarantined"))

    (found,) = operator.backend.read(
        lambda tx: tx.lookup_descriptions(everywhere, [["heron", "lake"]], limit=3, fewest=1)
    )

    rows = {d.id: d for d in found}
    assert rows[heron.id] == Described(
        heron.id, operator.realm, "project:web", "heron", "A heron by the lake",
        Status.ACTIVE, reviewer_only=False,
    )  # fmt: skip
    assert rows[tip].status is Status.QUARANTINED and rows[tip].reviewer_only


def test_a_common_word_alone_is_looked_up_by_neither_backend(
    world: dict[str, MemoryService],
) -> None:
    # Both count a description word up to DESCRIPTION_COMMON rows and look no such word up
    # alone: its newest rows would be any.
    operator = world["operator"]
    operator.write_many(
        [
            WriteRequest(f"t{i}", description=f"tern seen at the pier, sighting {i}")
            for i in range(DESCRIPTION_COMMON)
        ],
        notes=False,
    )
    rare = operator.write("rare", description="A tern and a skua at the pier").memory.id
    everywhere = MemoryFilter(realm=operator.realm)
    asked = [["tern"], ["tern", "pier"], ["tern", "skua"], ["skua", "mine"]]

    alone, both_common, with_rare, mine_only = (
        [d.id for d in rows]
        for rows in operator.backend.read(
            lambda tx: tx.lookup_descriptions(everywhere, asked, limit=2, fewest=2)
        )
    )

    # "skua": one description holds it, fewer than ``fewest``: "tern" is left alone
    assert alone == with_rare == []
    assert len(both_common) == 2 and both_common[0] == rare  # two common words: newest
    assert mine_only == []


def test_the_rarest_two_words_rank_the_longer_first_among_counts_alike() -> None:
    counts = {"tern": 64, "sighting": 64, "pier": 64, "skua": 1, "gull": 3, "heron": 3}
    assert rarest(["tern", "pier", "sighting"], counts, 2) == ["sighting", "pier"]
    assert rarest(["gull", "tern", "heron"], counts, 2) == ["heron", "gull"]
    assert rarest(["skua", "tern"], counts, 2) == []  # a common word left alone
    assert rarest(["skua", "gull", "gull"], counts, 2) == ["gull"]  # a rarer one may be
    assert rarest(["skua", "tern"], counts, 1) == ["skua", "tern"]
    assert rarest(["skua", " "], counts, 3) == []


# -- hygiene and verify ---------------------------------------------------------------------


def test_hygiene_lists_what_keeps_a_store_honest(
    make_service: ServiceFactory, world: dict[str, MemoryService], clock: ManualClock
) -> None:
    operator = make_service(settings=replace(Settings(), inline_max_bytes=100))
    operator.write("old", description="An old note nobody checked")
    clock.advance(days=100)
    operator.write("freeze", description="Code freeze for the spring release", expires="2026-01-01")
    operator.write(
        "runbook", description="Where the database runbook lives", references=["db-host"]
    )
    operator.write("rule", description="Answer in kind", load="inline", body="x" * 90)
    operator.write("alice-tz", description=ALICE)
    operator.write("alice-zone", description="Alice is in the UTC+8 time zone")
    operator.write("deploy-day", description="Deploys go out on Tuesdays")
    operator.write("deploy-friday", description="Deploys go out on Fridays")
    operator.decide("deploy-day", "contradict", target="deploy-friday")
    operator.dedup()
    world["planner"].propose("Freeze deploys on Fridays")

    report = operator.hygiene(unverified="90d", expiring="8d")

    counts = {s.name: s.count for s in report.sections}
    assert list(counts) == list(graph_sections())
    assert counts["unverified"] == 1 and report.section("unverified").items[0]["name"] == "old"
    assert counts["expired"] == 1
    assert report.section("dangling_references").items[0]["reference"] == "db-host"
    assert report.section("inline_pressure").items[0]["bytes"] == 90
    assert counts["contradictions"] == 1 and counts["conflicts"] == 1
    assert counts["tickets_expiring"] == 1
    (cluster,) = report.section("near_duplicates").items
    assert {m["name"] for m in cluster["memories"]} == {"alice-tz", "alice-zone"}
    assert not report.clean and report.to_dict()["sections"]["expired"]["count"] == 1
    assert operator.hygiene(expiring="1d").section("tickets_expiring").count == 0
    with pytest.raises(errors.InvalidTime):
        operator.hygiene(unverified="often")
    with pytest.raises(errors.AccessDenied):
        world["planner"].hygiene()


def graph_sections() -> tuple[str, ...]:
    from retain import hygiene

    return hygiene.SECTIONS


def test_a_superseded_end_leaves_the_near_duplicates(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    operator.write("alice-tz", description=ALICE)
    operator.write("alice-zone", description="Alice is in the UTC+8 time zone")
    operator.dedup()
    operator.decide("alice-tz", "supersede", target="alice-zone")
    assert operator.hygiene().section("near_duplicates").count == 0


def test_verify_counts_the_relations(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    operator.write("a", description="one")
    operator.write("b", description="two")
    operator.link("a", "b", "derived_from")
    report = operator.verify()
    assert report.relations == {
        "similar_to": 0, "supersedes": 0, "contradicts": 0, "derived_from": 1,
    }  # fmt: skip
    assert report.to_dict()["relations"]["derived_from"] == 1


def test_keeping_a_pair_twice_changes_nothing_the_second_time(
    world: dict[str, MemoryService],
) -> None:
    operator = world["operator"]
    operator.write("a", description="one")
    operator.write("b", description="two")
    first = operator.decide("a", "keep", target="b")
    before = store_state(operator)
    again = operator.decide("a", "keep", target="b")
    assert first.changed and first.receipt is not None
    assert not again.changed and again.receipt is None and store_state(operator) == before


def test_a_write_to_a_superseded_name_is_refused(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    operator.write("tz", description=ALICE)
    new = operator.write("tz2", description="Alice is in the UTC+9 time zone").memory
    operator.decide("tz", "supersede", target="tz2")
    before = store_state(operator)
    with pytest.raises(errors.NotActive) as refused:
        operator.write("tz", description="Alice is back on UTC+8")
    assert refused.value.details["superseded_by"] == new.id
    assert store_state(operator) == before


def deploy_days(operator: MemoryService) -> None:
    """Three notes of one attribute: ``day``, ``friday`` and ``thursday``."""
    operator.write("day", description="Deploys go out on Tuesdays")
    operator.write("friday", description="Deploys go out on Fridays")
    operator.write("thursday", description="Deploys go out on Thursdays from now on")


def test_superseding_settles_the_older_memorys_open_contradictions(
    world: dict[str, MemoryService],
) -> None:
    operator = world["operator"]
    deploy_days(operator)
    operator.decide("day", "contradict", target="friday")
    assert operator.gate("day", "contradicts").contested
    operator.decide("day", "supersede", target="thursday")
    assert not operator.gate("day", "contradicts").contested
    report = operator.hygiene()
    assert report.section("contradictions").count == report.section("conflicts").count == 0


def test_an_unknown_id_or_name_is_named_as_either(world: dict[str, MemoryService]) -> None:
    with pytest.raises(errors.NotFound) as missing:
        world["operator"].graph("01ZZZZZZZZZZZZZZZZZZZZZZZZ")
    assert "id or name" in missing.value.message
    with pytest.raises(errors.ProjectNotFound):
        world["operator"].graph("anything", project="nowhere")


def test_a_near_copy_with_other_details_is_noted_as_a_decision(
    world: dict[str, MemoryService],
) -> None:
    operator = world["operator"]
    operator.write("alice-tz", description=ALICE)
    result = operator.write("alice-nine", description="Alice works in the UTC+9 time zone")
    (note,) = result.notes
    assert "'alice-tz' says nearly the same with other details (+8 against +9)" in note
    assert "supersedes" in note and "contradict" in note


def test_a_note_passes_over_a_nearer_vector_the_detail_rule_lowers(
    world: dict[str, MemoryService],
) -> None:
    # "weekly" stands where "on Mondays" did: the nearer vector (cosine 0.90, against 0.84)
    # names another detail and loses the detail rule's 0.5, and few words are shared by
    # either; the note names the farther one, which the rule leaves as it scored.
    operator = world["operator"]
    operator.write_many(
        [
            WriteRequest(
                "weekly", description="Priya deploys billing services out of Lisbon weekly"
            ),
            WriteRequest(
                "monday", description="Priya releases the billing service from Lisbon each Monday"
            ),
        ],
        notes=False,
    )
    result = operator.write(
        "new", description="Priya deploys the billing service from Lisbon on Mondays"
    )
    (note,) = result.notes
    assert "'monday' already says something very similar" in note


def test_a_landed_ticket_is_where_its_memory_derives_from(
    world: dict[str, MemoryService],
) -> None:
    ticket = world["planner"].propose("Freeze deploys on Fridays")
    landed = world["operator"].approve(ticket.id, reason="agreed")
    assert landed.landed is not None
    (edge,) = world["operator"].graph(landed.landed).edges
    assert (edge.type, edge.out, edge.other, edge.reference) == (
        graph.DERIVED_FROM, True, None, f"ticket:{ticket.id}",
    )  # fmt: skip


def test_dedup_keeps_to_one_scope_when_asked(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    world["planner"].remember(ALICE)
    world["planner"].remember(ALICE + ", mostly")
    operator.write("a", description=ALICE)
    operator.write("b", description=ALICE + ", mostly")
    found = operator.dedup(scope="agent:planner")
    assert {p.first.scope for p in found.pairs} == {"agent:planner"} and found.compared == 2
    assert {p.first.scope for p in operator.dedup(scope="global").pairs} == {"global"}
    before = store_state(operator)
    for bad in ({"scope": "planner"}, {"scope": "global", "project": "web"}):
        with pytest.raises(errors.InvalidValue):
            operator.dedup(**bad)  # type: ignore[arg-type]
    assert store_state(operator) == before


def test_a_value_in_words_is_a_detail() -> None:
    assert graph.differing(
        "On-call for payments changes hands every two weeks",
        "On-call for payments changes hands daily",
    ) == (frozenset({"every", "two"}), frozenset({"daily"}))
    assert graph.differing("Backups run twice a day", "Backups run twice a day, at noon") == (
        frozenset(), frozenset(),
    )  # fmt: skip


def test_a_word_standing_where_the_other_names_someone_is_a_conflict() -> None:
    # "Yuki" is a name the batch knows; "Lena" opens her sentence, so shows no capital
    # of her own, but she stands where Yuki does: one sentence about two people
    names = graph.names_in(["Ask Yuki first"])
    assert graph.differing(
        "Lena's working hours are in UTC-8", "Yuki's working hours are in UTC-8", names
    ) == (frozenset({"lena"}), frozenset({"yuki"}))
    assert graph.differing(
        "heads up, lena avoids calls on Fridays",
        "Please be aware that Yuki Tanaka avoids calls on Fridays.",
        names,
    )[0] == frozenset({"heads", "lena"})
    # one word swapped for a detail inside a shared sentence: two values of one attribute
    assert graph.differing(
        "The payments team uses npm for builds", "The payments team uses Poetry for builds"
    ) == (frozenset({"npm"}), frozenset({"poetry"}))
    # a detail one side adds, or says in other words, is no conflict
    for a, b in (
        ("Sven is vegan", "For team meals, remember that Sven is vegan"),
        ("Priya Nair reports to Grace Okafor", "priya's boss is Grace Okafor"),
        ("Priya Nair is in the reporting line of Grace Okafor", "priya's boss is Grace Okafor"),
        (
            "auth-gateway deploys on Thursdays\nTold me directly.",
            "auth-gateway deploys on Thursdays, at 10:00",
        ),
    ):
        assert graph.differing(a, b, names) == (frozenset(), frozenset()), (a, b)


def test_a_capital_after_a_comma_or_semicolon_is_a_name() -> None:
    texts = ["Lena works from the office; Yuki works remotely", "heads up, Dima is away"]
    assert graph.names_in(texts) == {"yuki", "dima"}


def test_details_are_folded_without_accents() -> None:
    names = graph.names_in(["a note from Tomás"])
    assert names == {"tomas"}
    assert graph.details("Tomas leads search", names) == graph.details("ask Tomás") == {"tomas"}


def test_a_keep_needs_both_memories_active_and_records_keep_over_an_earlier_decision(
    world: dict[str, MemoryService],
) -> None:
    operator = world["operator"]
    deploy_days(operator)
    operator.decide("day", "contradict", target="friday")
    kept = operator.decide("friday", "keep", target="day")
    assert kept.changed and kept.relation.decision == "keep"
    operator.decide("day", "contradict", target="friday")  # open again, then kept again
    assert operator.decide("day", "keep", target="friday").relation.decision == "keep"
    operator.decide("day", "supersede", target="thursday")
    before = store_state(operator)
    with pytest.raises(errors.NotActive):
        operator.decide("day", "keep", target="friday")
    assert store_state(operator) == before
