"""Access grants: ``[access] control``, roles, config and stored grants, deny beats allow,
the row-level cut of reads and writes, and the grant verbs (on every backend)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import ServiceFactory

from retain.config import AccessSettings, Settings, load_settings
from retain.errors import (
    AccessDenied,
    ConfigInvalid,
    GrantReadOnly,
    InvalidValue,
    NotFound,
)
from retain.grants import Grant
from retain.service import MemoryService

SETUP = "operator:set-up"


def admin_grants(*extra: Grant) -> tuple[Grant, ...]:
    """The set-up operator may do everything in the default realm; then ``extra``."""
    mine = tuple(
        Grant(SETUP, action, "realm:default", id=f"config:{n}")
        for n, action in enumerate(
            ("realm.admin", "memory.read", "memory.write", "memory.delete", "team.memory.read"),
            start=1,
        )
    )
    return mine + tuple(
        Grant(g.subject, g.action, g.on, g.effect, id=f"config:{n}")
        for n, g in enumerate(extra, start=len(mine) + 1)
    )


def controlled(*extra: Grant, roles: dict[str, tuple[str, ...]] | None = None) -> Settings:
    return Settings(
        access=AccessSettings(control=True, roles=roles or {}, grants=admin_grants(*extra))
    )


@pytest.fixture
def realm(make_service: ServiceFactory) -> ServiceFactory:
    """A realm (access control off while it is set up) with project web, agents ada
    and bea, team blue (ada in it), and a memory in each scope."""
    setup = make_service(principal=SETUP)
    setup.add_project("web")
    setup.add_agent("ada")
    setup.add_agent("bea")
    setup.add_team("blue")
    setup.join_team("blue", "ada")
    setup.write("plan", description="the launch plan", body="ship on friday")
    setup.write("spec", description="the web spec", body="pages load fast", project="web")
    setup.acting_as("agent:ada").remember("my locker is twelve")
    setup.acting_as("agent:bea").remember("bea keeps the keys")
    return make_service


def names(service: MemoryService, **options: object) -> list[str | None]:
    return sorted((m.name or m.body) for m in service.list_memories(**options))  # type: ignore[arg-type]


def test_control_off_is_todays_table_and_grants_wait(realm: ServiceFactory) -> None:
    setup = realm(principal=SETUP)
    stored = setup.grant("app:ci", "memory.read", "scope:global", effect="deny")
    app = realm(principal="app:ci")
    assert names(app) == ["plan", "spec"]  # the deny waits for control = true
    assert [g.id for g in setup.list_grants()] == [stored.id]
    assert [e.kind for e in setup.events(limit=1000)].count("grant") == 1


def test_deny_is_the_default_and_the_refusal_names_the_action(realm: ServiceFactory) -> None:
    app = realm(principal="app:ci", settings=controlled())
    with pytest.raises(AccessDenied) as refused:
        app.list_memories()
    assert refused.value.details == {
        "principal": "app:ci",
        "verb": "list_memories",
        "action": "memory.read",
        "on": "realm:default",
        "fix": "grant",
    }
    with pytest.raises(AccessDenied):
        app.write("note", description="a note")


def test_realm_admin_is_asked_of_config_toml_not_of_the_grant_verb(
    realm: ServiceFactory,
) -> None:
    """The remedy for a missing ``realm.admin`` is the file's (the grant verb refuses to
    store one), and an agent's scope is named as a grant names it, its identity."""
    app = realm(
        principal="app:ci", settings=controlled(Grant("app:ci", "memory.read", "realm:default"))
    )
    with pytest.raises(AccessDenied) as refused:
        app.list_grants()
    assert "config.toml" in refused.value.remedy and "fix" not in refused.value.details
    reads = Grant("agent:ada", "memory.read", "identity:agent:ada")
    elsewhere = Grant("agent:ada", "memory.write", "identity:agent:bea")
    with pytest.raises(AccessDenied) as writing:
        realm(principal="agent:ada", settings=controlled(reads, elsewhere)).remember("a note")
    assert writing.value.details["on"] == "identity:agent:ada"


def test_a_deny_beats_an_allow(realm: ServiceFactory) -> None:
    both = controlled(
        Grant("app:ci", "memory.read", "realm:default"),
        Grant("app:ci", "memory.read", "scope:project:web", "deny"),
    )
    app = realm(principal="app:ci", settings=both)
    assert names(app) == ["plan"]  # the project's row is cut, the verb still runs
    with pytest.raises(NotFound):
        app.get("spec")
    assert [h.memory.name for h in app.search("web spec pages").hits] == []
    whole = controlled(
        Grant("app:ci", "memory.read", "realm:default"),
        Grant("app:ci", "memory.read", "realm:default", "deny"),
    )
    with pytest.raises(AccessDenied):
        realm(principal="app:ci", settings=whole).list_memories()


def test_an_anonymous_caller_is_held_to_the_same_grants(realm: ServiceFactory) -> None:
    with pytest.raises(AccessDenied):
        realm(principal="anonymous", settings=controlled()).get("plan")
    reads_global = controlled(Grant("anonymous", "memory.read", "scope:global"))
    anonymous = realm(principal="anonymous", settings=reads_global)
    assert anonymous.get("plan").memory.body == "ship on friday"
    with pytest.raises(NotFound):
        anonymous.get("spec")
    everyone = controlled(Grant("*", "memory.read", "scope:project:*"))
    assert names(realm(principal="anonymous", settings=everyone)) == ["spec"]


def test_a_role_holds_its_grants_for_its_principals(realm: ServiceFactory) -> None:
    settings = controlled(
        Grant("role:agents", "memory.read", "identity:agent:*"),
        Grant("role:agents", "memory.read", "scope:global"),
        roles={"agents": ("agent:*",)},
    )
    ada = realm(principal="agent:ada", settings=settings)
    recalled = [h.memory.body for h in ada.recall(["locker"]).hits]
    assert recalled == ["my locker is twelve"]  # its own; bea's stays bea's (the view)
    assert [h.memory.name for h in ada.search("launch plan").hits] == ["plan"]
    app = realm(principal="app:ci", settings=settings)  # not in the role
    with pytest.raises(AccessDenied):
        app.list_memories()


def test_a_team_row_needs_team_memory_read(realm: ServiceFactory) -> None:
    realm(principal=SETUP).acting_as("agent:ada").propose("use tabs", target="team:blue")
    reads = controlled(
        Grant("agent:ada", "memory.read", "realm:default"),
        Grant("agent:ada", "memory.write", "identity:agent:ada"),
    )
    ada = realm(principal="agent:ada", settings=reads)
    assert ada.list_proposals() == []  # a team:blue target needs team.memory.read
    teams = controlled(
        Grant("agent:ada", "memory.read", "realm:default"),
        Grant("agent:ada", "team.memory.read", "scope:team:*"),
    )
    assert [p.target for p in realm(principal="agent:ada", settings=teams).list_proposals()] == [
        "team:blue"
    ]


def test_a_write_needs_memory_write_on_the_rows_scope(realm: ServiceFactory) -> None:
    settings = controlled(
        Grant("app:ci", "memory.read", "realm:default"),
        Grant("app:ci", "memory.write", "scope:global"),
    )
    app = realm(principal="app:ci", settings=settings)
    before = realm(principal=SETUP).status().events
    with pytest.raises(AccessDenied) as refused:
        app.write("draft", description="a draft", project="web")
    assert refused.value.details["on"] == "scope:project:web"
    assert realm(principal=SETUP).status().events == before  # nothing written
    assert app.write("note", description="a global note").memory.scope == "global"
    with pytest.raises(AccessDenied) as deleting:
        app.delete("note")  # deleting is memory.delete
    assert deleting.value.details["action"] == "memory.delete"


def test_a_delete_is_judged_on_the_row_it_found_with_no_second_read(
    realm: ServiceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retain.storage.statements import SqlStatements

    settings = controlled(
        Grant("app:ci", "memory.read", "realm:default"),
        Grant("app:ci", "memory.delete", "scope:global"),
    )
    app = realm(principal="app:ci", settings=settings)
    original = SqlStatements.get_many
    asked: list[list[str]] = []

    def get_many(self: SqlStatements, ids: list[str]) -> list[object]:
        asked.append(list(ids))
        return original(self, ids)  # type: ignore[return-value]

    monkeypatch.setattr(SqlStatements, "get_many", get_many)
    plan = app.get("plan").memory
    asked.clear()
    assert app.delete("plan").memory.id == plan.id  # found by name, removed as found
    assert asked == []  # the removal read the row no second time
    with pytest.raises(AccessDenied) as refused:
        app.delete("spec", project="web")  # not granted memory.delete on the project
    assert refused.value.details["on"] == "scope:project:web"
    assert app.get("spec", project="web").memory.name == "spec"


def test_an_agent_writes_its_own_memory_only_where_granted(realm: ServiceFactory) -> None:
    reads = Grant("agent:ada", "memory.read", "identity:agent:ada")
    ada = realm(principal="agent:ada", settings=controlled(reads))
    with pytest.raises(AccessDenied):
        ada.remember("a new note")
    writes = controlled(reads, Grant("agent:ada", "memory.write", "identity:agent:ada"))
    ada = realm(principal="agent:ada", settings=writes)
    assert ada.remember("a new note").scope == "agent:ada"
    with pytest.raises(AccessDenied):  # forget is memory.delete
        ada.forget(ada.recall(["note"]).hits[0].memory.id)


def test_a_listing_cuts_its_pages_from_readable_rows(realm: ServiceFactory) -> None:
    setup = realm(principal=SETUP)
    for n in range(5):
        setup.write(f"g{n}", description=f"global note {n}")
        setup.write(f"w{n}", description=f"web note {n}", project="web")
    settings = controlled(
        Grant("app:ci", "memory.read", "realm:default"),
        Grant("app:ci", "memory.read", "scope:project:web", "deny"),
    )
    app = realm(principal="app:ci", settings=settings)
    from retain import fields

    pages: list[list[str | None]] = []
    after = None
    while True:
        page = app.list_memories(limit=2, after=after)
        if not page:
            break
        pages.append([m.name for m in page])
        after = fields.cursor_of(page[-1].position)
    assert [len(p) for p in pages] == [2, 2, 2]  # six readable rows, every page full
    assert sorted(n for p in pages for n in p if n) == ["g0", "g1", "g2", "g3", "g4", "plan"]


def test_the_event_log_withholds_what_the_grants_do_not_let_read(realm: ServiceFactory) -> None:
    settings = controlled(
        Grant("app:ci", "memory.read", "scope:global"),
        Grant("app:ci", "realm.admin", "realm:default"),
    )
    spec = realm(principal=SETUP).get("spec").memory
    app = realm(principal="app:ci", settings=settings)
    about = app.events(memory_id=spec.id)
    assert about and all(e.withheld and e.payload is None for e in about)


def test_config_grants_are_read_only(realm: ServiceFactory) -> None:
    settings = controlled(Grant("app:ci", "memory.read", "scope:global"))
    setup = realm(principal=SETUP, settings=settings)
    before = setup.status().events
    with pytest.raises(GrantReadOnly) as refused:
        setup.revoke("app:ci", "memory.read", "scope:global")
    assert refused.value.details["id"] == "config:6"
    with pytest.raises(NotFound):
        setup.revoke("app:ci", "memory.read", "scope:global", effect="deny")
    assert setup.status().events == before
    assert [(g.source, g.id) for g in setup.list_grants()][-1] == ("config", "config:6")


def test_grant_and_revoke_are_events_and_a_repeat_writes_nothing(realm: ServiceFactory) -> None:
    setup = realm(principal=SETUP, settings=controlled())
    made = setup.grant("role:readers", "memory.read", "scope:global")
    again = setup.grant("role:readers", "memory.read", "scope:global")
    assert again == made
    assert (made.source, made.realm, made.created_by) == ("stored", "default", SETUP)
    gone = setup.revoke("role:readers", "memory.read", "scope:global")
    assert gone.id == made.id
    kinds = [e.kind for e in setup.events(limit=1000) if e.kind in ("grant", "revoke")]
    assert kinds == ["grant", "revoke"]
    assert all(g.source == "config" for g in setup.list_grants())


def test_a_stored_grant_takes_effect_on_the_next_call(realm: ServiceFactory) -> None:
    settings = controlled()
    app = realm(principal="app:ci", settings=settings)
    setup = realm(principal=SETUP, settings=settings)
    with pytest.raises(AccessDenied):
        app.get("plan")
    setup.grant("app:ci", "memory.read", "scope:global")
    assert app.get("plan").memory.body == "ship on friday"
    setup.grant("app:ci", "memory.read", "scope:global", effect="deny")
    with pytest.raises(NotFound):
        app.get("plan")


@pytest.mark.parametrize(
    ("action", "on", "field"),
    [
        ("realm.admin", "realm:default", "action"),  # the file's alone
        ("memory.read", "realm:other", "on"),  # a stored grant covers its own realm
        ("memory.fly", "realm:default", "action"),
        ("memory.read", "shelf:3", "on"),
        ("memory.read", "identity:team:blue", "on"),
    ],
)
def test_a_grant_the_verb_may_not_store_is_refused(
    realm: ServiceFactory, action: str, on: str, field: str
) -> None:
    setup = realm(principal=SETUP)
    with pytest.raises(InvalidValue) as refused:
        setup.grant("app:ci", action, on)
    assert refused.value.details["field"] == field
    assert setup.list_grants() == []


def test_control_without_a_realm_admin_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigInvalid):
        AccessSettings(control=True, grants=(Grant("app:ci", "memory.read", "realm:default"),))
    (tmp_path / "config.toml").write_text("[access]\ncontrol = true\n")
    with pytest.raises(ConfigInvalid, match="realm.admin"):
        load_settings(tmp_path)


def test_config_toml_holds_roles_and_grants(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        "[access]\ncontrol = true\n"
        '[access.roles]\nreaders = ["agent:*", "app:ci"]\n'
        '[[access.grant]]\nsubject = "operator:alice"\naction = "realm.admin"\n'
        'on = "realm:default"\n'
        '[[access.grant]]\nsubject = "role:readers"\naction = "memory.read"\n'
        'on = "scope:team:*"\neffect = "deny"\n'
    )
    access = load_settings(tmp_path).access
    assert access.control and access.roles == {"readers": ("agent:*", "app:ci")}
    assert [(g.id, g.subject, g.effect) for g in access.grants] == [
        ("config:1", "operator:alice", "allow"),
        ("config:2", "role:readers", "deny"),
    ]
    (tmp_path / "config.toml").write_text(
        '[[access.grant]]\nsubject = "app:ci"\naction = "memory.fly"\non = "realm:default"\n'
    )
    with pytest.raises(ConfigInvalid, match="memory.fly"):
        load_settings(tmp_path)
    (tmp_path / "config.toml").write_text(
        '[[access.grant]]\nsubject = "app:ci"\naction = "memory.read"\non = "realm:x"\nwho = 1\n'
    )
    with pytest.raises(ConfigInvalid, match="who"):
        load_settings(tmp_path)


def test_control_off_reads_no_grant(realm: ServiceFactory) -> None:
    """With control off the gate binds nothing: no read of the grants at all."""
    from retain.service import access

    setup = realm(principal=SETUP)

    class Untouchable:
        def read(self, fn: object) -> None:
            raise AssertionError("control is off: the grants are not read")

    store = setup.store
    real = store.backend
    store.backend = Untouchable()  # type: ignore[assignment]
    try:
        assert access.bind(store, setup.actor, "get") is None
    finally:
        store.backend = real


def test_every_verb_of_the_policy_table_has_its_actions() -> None:
    from retain.grants import ACTIONS
    from retain.service import access, policy

    assert set(policy.POLICY) <= set(access.NEEDS)
    assert all(a in ACTIONS for actions in access.NEEDS.values() for a in actions)


# -- decisions on one row: review, retier, tickets ------------------------------------------

REVIEWER = "operator:rev"


def test_a_review_needs_on_the_rows_scope_what_its_verdict_writes(realm: ServiceFactory) -> None:
    """``memory.quarantine.review`` on the record's scope, and ``memory.write`` to release
    it or ``memory.delete`` to tombstone it there; an allow elsewhere is not enough."""
    held = realm(principal="agent:ada", settings=Settings(llm_writes="quarantined"))
    origin = held.remember("the build needs node 20")
    ada = "identity:agent:ada"
    base = (
        Grant(REVIEWER, "memory.read", ada),
        Grant(REVIEWER, "memory.quarantine.review", ada),
        Grant(REVIEWER, "memory.write", "scope:global"),
        Grant(REVIEWER, "memory.delete", "scope:global"),
    )
    reviewer = realm(principal=REVIEWER, settings=controlled(*base))
    for verdict, action in (("release", "memory.write"), ("tombstone", "memory.delete")):
        with pytest.raises(AccessDenied) as refused:
            reviewer.review(origin.id, verdict, origin.content_hash)
        assert (refused.value.details["action"], refused.value.details["on"]) == (
            action, "identity:agent:ada",
        )  # fmt: skip
    allowed = controlled(*base, Grant(REVIEWER, "memory.delete", ada))
    decided = realm(principal=REVIEWER, settings=allowed).review(
        origin.id, "tombstone", origin.content_hash
    )
    assert decided.outcome == "tombstoned"


def test_a_retier_needs_memory_retier_on_the_rows_scope(realm: ServiceFactory) -> None:
    settings = controlled(
        Grant(REVIEWER, "memory.read", "realm:default"),
        Grant(REVIEWER, "memory.retier", "scope:global"),
    )
    reviewer = realm(principal=REVIEWER, settings=settings)
    (spec,) = [m for m in realm(principal=SETUP).list_memories(project="web") if m.name == "spec"]
    with pytest.raises(AccessDenied) as refused:
        reviewer.retier(spec.id, "observed", reason="unchecked")
    assert refused.value.details["on"] == "scope:project:web"
    assert reviewer.retier("plan", "observed", reason="unchecked").memory.trust.value == "observed"


def test_a_ticket_is_decided_with_ticket_decide_on_its_target(realm: ServiceFactory) -> None:
    ada = realm(principal="agent:ada")
    to_global = ada.propose("Freeze on Fridays")
    to_team = ada.propose("Stand-up at nine", target="team:blue")
    settings = controlled(
        Grant(REVIEWER, "memory.read", "realm:default"),
        Grant(REVIEWER, "ticket.decide", "scope:team:blue"),
    )
    curator = realm(principal=REVIEWER, settings=settings)
    for decide in (curator.approve, curator.reject):
        with pytest.raises(AccessDenied) as refused:
            decide(to_global.id)
        assert refused.value.details["on"] == "scope:global"
    assert curator.approve(to_team.id).status == "approved"
