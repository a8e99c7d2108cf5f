"""The reviewer's routes of the REST door: ``GET /v1/quarantine`` and
``POST /v1/memories/{id}/review``, as the token's principal, on both backends."""

from __future__ import annotations

from fastapi.testclient import TestClient
from tests.conftest import ServiceFactory, store_state

from retain.config import Settings
from retain.doors import http

TOKENS = {"t-op": "operator:ann", "t-ada": "agent:ada", "t-app": "app:ci", "t-stew": "steward"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_an_operator_releases_what_an_agent_wrote_under_the_posture(
    make_service: ServiceFactory,
) -> None:
    operator = make_service(settings=Settings(llm_writes="quarantined"))
    operator.add_agent("ada")
    client = TestClient(http.create_app(operator, tokens=TOKENS))
    written = client.post(
        "/v1/remember", json={"text": "the staging db is on port 5433"}, headers=bearer("t-ada")
    ).json()
    assert written["status"] == "quarantined"
    recalled = client.post("/v1/recall", json={"queries": ["staging db"]}, headers=bearer("t-ada"))
    assert recalled.json()["memories"] == []
    assert client.get(f"/v1/memories/{written['id']}", headers=bearer("t-app")).status_code == 404
    page = client.get("/v1/quarantine", headers=bearer("t-op")).json()
    (row,) = page["quarantine"]
    assert page["next_cursor"] is None
    assert (row["id"], row["quarantine_reason"], row["author"]) == (
        written["id"],
        ["llm_writes"],
        "agent:ada",
    )
    decision = {"verdict": "release", "expected_content_hash": row["content_hash"]}
    done = client.post(f"/v1/memories/{row['id']}/review", json=decision, headers=bearer("t-op"))
    assert done.status_code == 200 and done.json()["outcome"] == "released"
    assert done.json()["decision"]["review"]["reviewer"] == "operator:ann"
    (hit,) = client.post(
        "/v1/recall", json={"queries": ["staging db"]}, headers=bearer("t-ada")
    ).json()["memories"]
    assert (hit["trust"], hit["ever_quarantined"], hit["derived_from"]) == (
        "observed",
        True,
        row["id"],
    )
    replay = client.post(
        f"/v1/memories/{row['id']}/review", json=decision, headers=bearer("t-stew")
    )
    assert replay.json()["outcome"] == "already_released"


def test_review_refusals_are_the_services_codes_and_write_nothing(
    make_service: ServiceFactory,
) -> None:
    operator = make_service()
    operator.add_agent("ada")
    held = make_service(principal="agent:ada", settings=Settings(llm_writes="quarantined"))
    memory = held.remember("the staging db is on port 5433")
    client = TestClient(http.create_app(operator, tokens=TOKENS))
    before = store_state(operator)
    route = f"/v1/memories/{memory.id}/review"
    cases = [
        ("t-op", {"verdict": "release", "expected_content_hash": "x"}, 409, "content_mismatch"),
        ("t-ada", {"verdict": "release", "expected_content_hash": "x"}, 403, "access_denied"),
        ("t-app", {"verdict": "tombstone", "expected_content_hash": "x"}, 403, "access_denied"),
        ("t-op", {"verdict": "approve", "expected_content_hash": "x"}, 400, "invalid_value"),
    ]
    for token, body, status, code in cases:
        answer = client.post(route, json=body, headers=bearer(token))
        assert (answer.status_code, answer.json()["error"]["code"]) == (status, code), body
    mismatch = client.post(
        route, json={"verdict": "release", "expected_content_hash": "x"}, headers=bearer("t-op")
    ).json()["error"]
    assert "GET /v1/quarantine" in mismatch["remedy"]
    listed = client.get("/v1/quarantine", headers=bearer("t-ada"))
    assert (listed.status_code, listed.json()["error"]["code"]) == (403, "access_denied")
    assert store_state(operator) == before
