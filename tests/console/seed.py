"""A realm with something on every page of the console: shared and agent memories, a
supersede chain, a record waiting for review in an agent's scope and an anonymous tip
waiting in the global tier, a forgotten record, a hold, a ticket, injections."""

from __future__ import annotations

from dataclasses import dataclass

from retain.config import Settings
from retain.service import MemoryService

TOKENS = {
    "operator-token": "operator:alice",  # reviews
    "app-token": "app:viewer",  # reads the shared tiers; reviews nothing
    "ada-token": "agent:ada",  # reads its own scope; reviews nothing
}


@dataclass(frozen=True, slots=True)
class Seeded:
    plan: str  # a global memory, held
    chain: tuple[str, str, str]  # ada's note and the two updates that replaced it
    held: str  # ada's write waiting for review
    held_body: str
    tip: str  # an anonymous tip waiting for review in the global tier
    forgotten: str  # a global memory erased
    ticket: str  # ada's proposal


def seed(operator: MemoryService) -> Seeded:
    operator.add_project("web")
    operator.add_agent("ada")
    plan = operator.write(
        "launch-plan", description="The launch plan", body="Ship on Friday after the demo.",
        tags=["launch"],
    ).memory  # fmt: skip
    operator.write(
        "cache-policy", description="How the web cache expires", body="Entries live ten minutes.",
        project="web", load="inline",
    )  # fmt: skip
    operator.hold(plan.id, reason="litigation: keep the launch records")
    ada = operator.acting_as("agent:ada", session="s1")
    first = ada.remember("Tea is served at three.")
    second = ada.update(first.id, "Tea is served at four.")
    third = ada.update(second.id, "Tea is served at five, in the garden.")
    ada.context(turn="when is tea?", session="s1")  # the injection ledger
    ticket = ada.propose("Tea times belong to the whole team.", evidence="ada's notes")
    held_body = "The staging password rotates every Monday."
    held = MemoryService(  # the same store, under a posture that holds every agent write
        operator.backend, settings=Settings(llm_writes="quarantined"), clock=operator.clock,
        principal="agent:ada", realm=operator.realm,
    ).remember(held_body)  # fmt: skip
    anonymous = MemoryService(
        operator.backend, settings=Settings(anonymous_writes=True), clock=operator.clock,
        principal="anonymous", realm=operator.realm,
    )  # fmt: skip
    tip = anonymous.write("tip", description="An anonymous tip", body="The printer jams on A3.")
    erased = operator.write("scratch", description="A passing thought", body="forget me").memory
    operator.forget(erased.id, reason="asked to erase it", compact=False)
    return Seeded(
        plan.id, (first.id, second.id, third.id), held.id, held_body, tip.memory.id, erased.id,
        ticket.id,
    )  # fmt: skip
