"""The constructed corpus of ``bench/dedup.py``: a few hundred agent-memory notes with
planted near-copies and related-but-distinct pairs, built from a seed.

A note states one *fact*: an attribute (a ``Family``: someone's time zone, a team's
review rule, a service's deploy day…) of one entity, with one value. Each family has
hand-written phrasings in three registers (neutral, casual, formal), clauses and body
sentences that add a detail, and a pool of values. The build draws entities and values
for every family, writes each fact once, and then plants, for some facts:

* a near-copy, the same fact written again, of one kind: ``reworded`` (another phrasing
  of the same register), ``added_detail`` (a clause or a body added, in the same
  phrasing half the time, another phrasing of its register otherwise) or ``register``
  (casual against neutral or formal);
* a ``changed_value`` twin: the same attribute of the same entity, another value (in the
  same phrasing half the time).

Labels follow from the facts, not from the plants alone: two notes of one fact are a
near-copy; of one entity and one family, ``changed_value``; of one entity and two
families, ``same_topic``; of one family and two entities, ``same_attribute`` (not
planted, reported for reading); any other pair is unrelated. About a fifth of the notes
carry a provenance body ("From the 1:1 on 3 April."), as notes written at different
times do, and a few dozen one-off notes that belong to no family are mixed in.

Nothing here reads ``retain.graph``: the phrasings were written as people and agents
write such notes, not to suit or defeat the finder's detail rule. The module runs past
600 lines because most of it is those phrasings: data, read top to bottom, not logic.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Any

NEAR_KINDS = ("reworded", "added_detail", "register")
RELATED_KINDS = ("same_topic", "changed_value")
P_COPY = 0.55  # share of facts given a near-copy
P_CHANGED = 0.3  # share of facts given a changed_value twin
P_PROVENANCE = 0.2  # share of notes given a provenance body
PER_KIND = {"person": 5, "team": 4, "service": 5, "project": 4, "user": 1}


@dataclass(frozen=True, slots=True)
class Entity:
    """Whom or what a note is about, in the forms a template names it by."""

    kind: str
    name: str  # inside a sentence
    Name: str  # at its start
    casual: str
    formal: str  # inside a sentence
    Formal: str  # at its start
    their: str = "their"
    them: str = "them"

    def fields(self) -> dict[str, str]:
        return {
            "name": self.name,
            "Name": self.Name,
            "casual": self.casual,
            "formal": self.formal,
            "Formal": self.Formal,
            "their": self.their,
            "them": self.them,
        }


def person(first: str, last: str, casual: str, their: str, them: str) -> Entity:
    full = f"{first} {last}"
    return Entity("person", first, first, casual, full, full, their, them)


def team(topic: str) -> Entity:
    return Entity(
        "team", f"the {topic} team", f"The {topic} team", topic, f"the {topic.title()} team",
        f"The {topic.title()} team", "its", "it",
    )  # fmt: skip


def service(name: str) -> Entity:
    return Entity(
        "service", name, name, name, f"the {name} service", f"The {name} service", "its", "it"
    )


def project(name: str, casual: str) -> Entity:
    capital = name[0].upper() + name[1:]
    return Entity("project", name, capital, casual, name, capital, "its", "it")


ENTITIES: dict[str, tuple[Entity, ...]] = {
    "person": (
        person("Alice", "Chen", "alice", "her", "her"),
        person("Bob", "Martin", "bob", "his", "him"),
        person("Priya", "Nair", "priya", "her", "her"),
        person("Wei", "Zhang", "wei", "his", "him"),
        person("Marta", "Kowalska", "marta", "her", "her"),
        person("Tomás", "Ortega", "tomas", "his", "him"),
        person("Yuki", "Tanaka", "yuki", "their", "them"),
        person("Olu", "Adeyemi", "olu", "his", "him"),
        person("Sven", "Larsson", "sven", "his", "him"),
        person("Fatima", "Haddad", "fatima", "her", "her"),
        person("Dmitri", "Volkov", "Dima", "his", "him"),
        person("Katherine", "Moore", "Kate", "her", "her"),
        person("Kwame", "Mensah", "kwame", "his", "him"),
        person("Noor", "Rahman", "noor", "her", "her"),
        person("Lena", "Fischer", "lena", "her", "her"),
        person("Mateo", "Silva", "mateo", "his", "him"),
    ),
    "team": tuple(
        team(t) for t in ("payments", "mobile", "data platform", "search", "growth", "infra")
    ),
    "service": tuple(
        service(s)
        for s in (
            "billing-api",
            "checkout-web",
            "search-indexer",
            "auth-gateway",
            "notifications-worker",
            "report-builder",
            "ledger-sync",
        )
    ),  # fmt: skip
    "project": (
        project("the billing migration", "billing migration"),
        project("Project Atlas", "atlas"),
        project("the mobile app rewrite", "app rewrite"),
        project("the search revamp", "search revamp"),
        project("the data lake", "data lake"),
    ),
    "user": (
        Entity("user", "the user", "The user", "user", "the user", "The user", "their", "them"),
    ),
}


@dataclass(frozen=True, slots=True)
class Family:
    """One attribute of an entity: its phrasings by register (``{Name}``, ``{casual}``,
    ``{formal}``… name the entity, ``{v}`` the value, ``{v[key]}`` one of its forms),
    clauses and bodies that add a detail, and the values it takes."""

    name: str
    kind: str
    values: tuple[Any, ...]
    neutral: tuple[str, ...]
    casual: tuple[str, ...]
    formal: tuple[str, ...]
    clauses: tuple[str, ...]
    bodies: tuple[str, ...]

    def phrasings(self, register: str) -> tuple[str, ...]:
        return {"neutral": self.neutral, "casual": self.casual, "formal": self.formal}[register]


FAMILIES: tuple[Family, ...] = (
    # people
    Family(
        "timezone",
        "person",
        (
            {"tz": "UTC+8", "place": "Singapore"},
            {"tz": "UTC-5", "place": "New York"},
            {"tz": "UTC+1", "place": "Berlin"},
            {"tz": "UTC+5:30", "place": "Bangalore"},
            {"tz": "UTC-8", "place": "Seattle"},
            {"tz": "UTC+9", "place": "Tokyo"},
        ),
        (
            "{Name} works in the {v[tz]} time zone",
            "{Name}'s working hours are in {v[tz]}",
            "{Name} is on {v[tz]} time",
        ),
        ("{casual}'s on {v[tz]} btw", "fyi {casual} is {v[tz]}, plan calls around that"),
        (
            "Please note that {Formal} operates in the {v[tz]} time zone.",
            "{Formal} observes {v[tz]} for scheduling purposes.",
        ),
        ("; {they_are} based in {v[place]}", "; anything after 10:00 UTC is late in {their} day"),
        (
            "Schedule calls in {their} morning where possible.",
            "Confirmed when we set up the shared calendar; {Name} moved to {v[place]} last year.",
        ),
    ),
    Family(
        "reply_style",
        "person",
        (
            "short, direct answers",
            "long, detailed explanations",
            "answers as bullet points",
            "the code first and the explanation after",
            "a summary before any detail",
        ),
        (
            "{Name} prefers {v}",
            "When replying to {name}, give {v}",
            "{Name} wants {v} in replies",
        ),
        ("{casual} likes {v}, keep it that way", "{casual} → {v} pls"),
        (
            "{Formal} has expressed a preference for {v}.",
            "Responses to {formal} should consist of {v}.",
        ),
        (", especially in code reviews", "; no small talk"),
        (
            "Said so after the long thread about the cache rewrite.",
            "This applies to chat; written reports can be longer.",
        ),
    ),
    Family(
        "contact",
        "person",
        (
            "Slack direct messages",
            "email",
            "a phone call",
            "a comment on the ticket",
            "the team channel rather than direct messages",
        ),
        (
            "The best way to reach {name} is {v}",
            "{Name} prefers to be contacted through {v}",
            "Contact {name} through {v}",
        ),
        ("{casual} only really answers {v}", "to get hold of {casual}, use {v}"),
        (
            "{Formal} requests that all communication be sent through {v}.",
            "The preferred contact method for {formal} is {v}.",
        ),
        (", at least for anything urgent", "; replies usually come within the hour"),
        (
            "Messages sent any other way tend to go unanswered for days.",
            "Out of hours, only for production incidents.",
        ),
    ),
    Family(
        "editor",
        "person",
        ("Vim", "VS Code", "Emacs", "IntelliJ IDEA", "Helix"),
        (
            "{Name} uses {v} as {their} editor",
            "{Name} writes code in {v}",
            "{Name}'s editor of choice is {v}",
        ),
        ("{casual} is a {v} person", "{casual} lives in {v}, don't send other setups"),
        (
            "{Formal}'s development environment is {v}.",
            "{Formal} works primarily in the {v} editor.",
        ),
        (", with a heavily customised config", "; {their} settings are in the dotfiles repo"),
        (
            "Relevant when sending editor-specific setup instructions.",
            "Keep snippets in a form that pastes cleanly into it.",
        ),
    ),
    Family(
        "diet",
        "person",
        ("vegetarian", "vegan", "allergic to peanuts", "gluten intolerant", "teetotal"),
        (
            "{Name} is {v}",
            "For team meals, remember that {name} is {v}",
            "{Name} is {v}, so plan food accordingly",
        ),
        ("{casual}'s {v} fyi", "reminder: {casual} = {v}"),
        (
            "For catering purposes, please note that {formal} is {v}.",
            "{Formal} has the following dietary requirement: {v}.",
        ),
        ("; check the menu before booking a restaurant", "; this matters for the offsite"),
        ("Came up while planning the team dinner.", "Ask the caterer for a separate dish."),
    ),
    Family(
        "role",
        "person",
        (
            "the tech lead of the payments team",
            "the product manager for search",
            "the engineering manager for mobile",
            "the designer on the checkout flow",
            "the security champion for the platform group",
        ),
        ("{Name} is {v}", "{Name} works as {v}", "{Name}'s role is {v}"),
        ("{casual} = {v}", "fyi {casual} is {v}"),
        ("{Formal} holds the position of {v}.", "{Formal} serves as {v}."),
        (", since the last reorg", "; design docs need {their} sign-off"),
        ("Go to {them} for decisions on scope.", "Listed on the team page of the wiki."),
    ),
    Family(
        "leave",
        "person",
        (
            "from 3 to 14 March",
            "for the whole of August",
            "from 23 December to 2 January",
            "on 12 and 13 May",
            "for two weeks from 1 July",
        ),
        ("{Name} is on leave {v}", "{Name} will be away {v}", "{Name} is out of office {v}"),
        ("{casual} is off {v}", "{casual} ooo {v}"),
        (
            "{Formal} will be unavailable {v} owing to annual leave.",
            "{Formal} has booked annual leave {v}.",
        ),
        (", with no laptop", "; Grace covers for {them}"),
        (
            "Hand over open reviews before then.",
            "Reachable by phone only for emergencies; the auto-reply names a deputy.",
        ),
    ),
    Family(
        "manager",
        "person",
        ("Grace Okafor", "Martin Lund", "Sarah Kim", "Diego Ruiz", "Hannah Berg"),
        ("{Name} reports to {v}", "{Name}'s manager is {v}", "{v} manages {name}"),
        ("{casual}'s boss is {v}", "{casual} reports to {v} now"),
        ("{Formal} is in the reporting line of {v}.", "{Formal}'s line manager is {v}."),
        (", as of the April reorg", "; this covers performance reviews and leave requests"),
        (
            "Escalations about {their} work go to {v} first.",
            "The org chart on the intranet is out of date on this.",
        ),
    ),
    Family(
        "meetings",
        "person",
        (
            "does not take meetings before 10:00",
            "keeps mornings free for focus work",
            "only takes meetings on Tuesdays and Thursdays",
            "avoids calls on Fridays",
            "prefers meetings late in the afternoon",
        ),
        ("{Name} {v}", "Note that {name} {v}", "{Name} generally {v}"),
        ("{casual} {v}, don't book over it", "heads up, {casual} {v}"),
        ("Please be aware that {formal} {v}.", "As a rule, {formal} {v}."),
        (", to protect focus time", ", except during incidents"),
        (
            "Calendar invites that break this get declined automatically.",
            "Agreed in the team's working agreement.",
        ),
    ),
    Family(
        "language",
        "person",
        ("Portuguese", "Japanese", "German", "Spanish", "French"),
        (
            "{Name}'s first language is {v}",
            "{Name} is a native {v} speaker",
            "{Name} speaks {v} natively",
        ),
        ("{casual} speaks {v} natively fwiw", "{casual}'s a native {v} speaker"),
        ("{Formal}'s native language is {v}.", "{Formal} is a native speaker of {v}."),
        ("; {their} English is fluent too", "; {they_are} happy to review translations"),
        ("Useful for the localisation reviews.", "Written summaries help in long calls."),
    ),
    # teams
    Family(
        "commits",
        "team",
        (
            "Conventional Commits",
            "the Angular commit format",
            "a ticket number at the start of every message",
            "gitmoji",
        ),
        (
            "{Name} writes commit messages in {v}",
            "Commit messages in {name}'s repos follow {v}",
            "{Name} follows {v} for commits",
        ),
        ("{casual} does {v} for commits", "commits in {casual} repos = {v}"),
        (
            "All commits by {formal} must follow {v}.",
            "{Formal} has standardised on {v} for commit messages.",
        ),
        (", enforced by a commit-msg hook", "; CI checks the format"),
        ("Pull requests with other formats get bounced.", "The changelog is generated from them."),
    ),
    Family(
        "approvals",
        "team",
        (
            "two approvals",
            "one approval",
            "an approval from a code owner",
            "an approval from someone outside the team",
        ),
        (
            "Pull requests in {name} need {v} before merging",
            "{Name} requires {v} on every pull request",
            "Nothing merges in {name} without {v}",
        ),
        ("{casual} PRs need {v}", "need {v} to merge anything in {casual}"),
        (
            "Merging requires {v} under {formal}'s review policy.",
            "{Formal} mandates {v} prior to merge.",
        ),
        (", plus a green CI run", ", even for documentation changes"),
        (
            "Branch protection enforces it on main.",
            "Agreed after a bad merge broke the nightly build.",
        ),
    ),
    Family(
        "packages",
        "team",
        ("pnpm", "yarn", "npm", "uv", "Poetry", "pip-tools"),
        (
            "{Name} uses {v} to manage dependencies",
            "Dependencies in {name}'s repos are managed with {v}",
            "{Name} installs packages with {v}",
        ),
        ("{casual} is on {v}", "{casual} uses {v}, don't commit other lockfiles"),
        (
            "{Formal} has standardised on {v} for dependency management.",
            "Dependency management for {formal} is handled with {v}.",
        ),
        (", with the lockfile committed", "; the tool's version is pinned in the README"),
        ("Mixing tools produces conflicting lockfiles.", "CI fails if the lockfile is stale."),
    ),
    Family(
        "line_length",
        "team",
        ("80", "88", "100", "120"),
        (
            "{Name} formats code with a maximum line length of {v}",
            "Lines in {name}'s code are capped at {v} characters",
            "The line length limit for {name} is {v}",
        ),
        ("{casual} line length = {v}", "{casual} wraps at {v} cols"),
        (
            "{Formal} enforces a maximum line length of {v} characters.",
            "Code from {formal} must not exceed {v} characters per line.",
        ),
        (", set in pyproject.toml", "; the formatter checks it in CI"),
        ("Editors pick it up from the shared config.", "Long URLs in comments are exempt."),
    ),
    Family(
        "standup",
        "team",
        ("9:30", "10:00", "9:15", "11:00"),
        (
            "{Name} holds standup at {v}",
            "Standup for {name} happens at {v}",
            "{Name} meets for standup at {v}",
        ),
        ("{casual} standup {v}", "{casual} standup is at {v}, don't be late"),
        (
            "The daily standup of {formal} is scheduled for {v}.",
            "{Formal} convenes its daily standup at {v}.",
        ),
        (", in the small meeting room", "; it lasts fifteen minutes"),
        ("Async updates in the channel are fine when travelling.", "Cameras optional."),
    ),
    Family(
        "retro",
        "team",
        (
            "every other Thursday",
            "on the last Friday of the month",
            "every Monday morning",
            "at the end of each two-week sprint",
        ),
        (
            "{Name} runs retrospectives {v}",
            "Retros for {name} happen {v}",
            "{Name} holds its retro {v}",
        ),
        ("{casual} retro {v}", "{casual} does retros {v}"),
        (
            "{Formal} conducts a retrospective {v}.",
            "Retrospectives of {formal} are held {v}.",
        ),
        (
            ", facilitated by a different person each time",
            "; action items are tracked on the board",
        ),
        ("Notes go on the team wiki.", "Skipped during release weeks."),
    ),
    Family(
        "alerts",
        "team",
        ("the #ops-alerts channel", "PagerDuty", "Opsgenie", "the on-call email list"),
        (
            "Alerts for {name} go to {v}",
            "{Name} receives its alerts through {v}",
            "{Name}'s alerts are routed to {v}",
        ),
        ("{casual} alerts → {v}", "{casual} gets paged via {v}"),
        (
            "Alert notifications for {formal} are delivered via {v}.",
            "{Formal} has configured {v} as its alerting destination.",
        ),
        (", with a 5-minute escalation to the secondary", ", during business hours only"),
        ("Ask the on-call for access.", "Muting an alert requires a ticket."),
    ),
    Family(
        "oncall",
        "team",
        (
            "weekly, switching on Mondays",
            "every two weeks",
            "daily",
            "weekly, switching on Wednesdays",
        ),
        (
            "On-call in {name} rotates {v}",
            "{Name}'s on-call rotation changes {v}",
            "{Name} hands over on-call {v}",
        ),
        ("{casual} on-call rotates {v}", "{casual} oncall swaps {v}"),
        (
            "The on-call rotation of {formal} changes hands {v}.",
            "{Formal} operates an on-call rotation that turns over {v}.",
        ),
        (", with a handover note in the channel", "; the secondary becomes primary at handover"),
        ("The schedule lives in PagerDuty.", "Swaps must be agreed with the manager."),
    ),
    # services
    Family(
        "deploy_day",
        "service",
        (
            {"days": "Tuesdays", "day": "Tuesday"},
            {"days": "Thursdays", "day": "Thursday"},
            {"days": "Wednesdays", "day": "Wednesday"},
            {"days": "Mondays", "day": "Monday"},
        ),
        (
            "{Name} deploys happen on {v[days]}",
            "{Name} is deployed to production every {v[day]}",
            "Production releases of {name} go out on {v[days]}",
        ),
        ("{casual} ships {v[days]}", "we deploy {casual} on {v[days]}, not other days"),
        (
            "Production deployments of {formal} are scheduled for {v[days]}.",
            "{Formal} is released to production on {v[days]} only.",
        ),
        (
            ", after the 10:00 standup",
            ", unless there is a hotfix",
            ", during European business hours",
        ),
        (
            "Changes merged after the cut-off wait for the next window.",
            "The release manager announces the window in the channel.",
        ),
    ),
    Family(
        "deploy_tool",
        "service",
        (
            "Argo CD",
            "a GitHub Actions workflow",
            "Spinnaker",
            "the deploy script on the bastion host",
            "Helm from the release pipeline",
        ),
        (
            "{Name} is deployed with {v}",
            "Deployments of {name} run through {v}",
            "{Name} gets to production via {v}",
        ),
        ("{casual} deploys go thru {v}", "to ship {casual} use {v}"),
        (
            "The deployment mechanism for {formal} is {v}.",
            "{Formal} is released exclusively through {v}.",
        ),
        (", triggered by tagging a release", ", with manual approval for production"),
        ("Never deploy it by hand from a laptop.", "Rollbacks use the same path."),
    ),
    Family(
        "database",
        "service",
        ("PostgreSQL 15", "MySQL 8", "DynamoDB", "MongoDB", "PostgreSQL 13"),
        (
            "{Name} stores its data in {v}",
            "{Name}'s database is {v}",
            "{Name} runs on {v}",
        ),
        ("{casual} is backed by {v}", "{casual} db = {v}"),
        (
            "The persistence layer of {formal} is {v}.",
            "{Formal} uses {v} as its primary datastore.",
        ),
        (", with a read replica for reports", "; the infra team manages it"),
        (
            "Migrations live in the service's own repo.",
            "Direct writes from other services are not allowed.",
        ),
    ),
    Family(
        "region",
        "service",
        ("eu-west-1", "us-east-1", "ap-southeast-1", "eu-central-1"),
        (
            "{Name} runs in {v}",
            "{Name} is hosted in the {v} region",
            "{Name}'s production cluster is in {v}",
        ),
        ("{casual} lives in {v}", "{casual} prod = {v}"),
        (
            "Production infrastructure for {formal} is located in {v}.",
            "{Formal} is deployed to the {v} AWS region.",
        ),
        (", with a standby in a second region", ", for data-residency reasons"),
        ("Latency from other regions is noticeable.", "Failover is manual."),
    ),
    Family(
        "memory_limit",
        "service",
        ("512 MB", "1 GB", "2 GB", "4 GB"),
        (
            "{Name} pods have a memory limit of {v}",
            "Each {name} container is capped at {v} of memory",
            "The memory limit for {name} is {v}",
        ),
        ("{casual} gets {v} ram", "{casual} mem limit {v}"),
        (
            "{Formal} containers are provisioned with a memory limit of {v}.",
            "Memory allocation for {formal} is limited to {v} per instance.",
        ),
        ("; pods get OOM-killed above it", "; the limit is set in the Helm values file"),
        (
            "Raise it through a pull request to the infra repo.",
            "The limit was tuned after the load tests.",
        ),
    ),
    Family(
        "backups",
        "service",
        ("nightly at 02:00 UTC", "every six hours", "hourly", "weekly on Sundays"),
        (
            "{Name} is backed up {v}",
            "Backups of {name} run {v}",
            "{Name}'s database backups happen {v}",
        ),
        ("{casual} backups {v}", "{casual} gets backed up {v}"),
        (
            "Backups of {formal} are taken {v}.",
            "{Formal} data is backed up {v}.",
        ),
        ("; they are kept for 30 days", ", to a bucket in another region"),
        ("Restores are tested once a quarter.", "Ask the infra team before running a restore."),
    ),
    Family(
        "owner",
        "service",
        ("Grace Okafor", "Martin Lund", "Sarah Kim", "Diego Ruiz", "Hannah Berg"),
        (
            "{Name} is owned by {v}",
            "{v} owns {name}",
            "Questions about {name} go to {v}",
        ),
        ("{casual} → ask {v}", "{v} is the {casual} person"),
        ("The designated owner of {formal} is {v}.", "{v} is responsible for {formal}."),
        (", including its on-call", ", until the handover to the new team"),
        ("Check with them before changing its API.", "Listed in the service catalogue."),
    ),
    Family(
        "freeze",
        "service",
        (
            "after 16:00 on Fridays",
            "from 20 December to 6 January",
            "during the quarterly audit week",
            "on public holidays",
        ),
        (
            "No deploys of {name} {v}",
            "{Name} has a deploy freeze {v}",
            "{Name} must not be deployed {v}",
        ),
        ("don't ship {casual} {v}", "{casual}: no deploys {v}"),
        (
            "Deployments of {formal} are prohibited {v}.",
            "A change freeze applies to {formal} {v}.",
        ),
        (", except for security fixes", ", unless the incident commander approves"),
        ("The pipeline blocks it automatically.", "Put urgent changes behind a flag instead."),
    ),
    # projects
    Family(
        "queue",
        "project",
        ("Kafka", "RabbitMQ", "NATS", "Amazon SQS"),
        (
            "{Name} uses {v} as its message queue",
            "We picked {v} for {name}'s event bus",
            "The queue for {name} is {v}",
        ),
        ("{casual}: going with {v} for queues", "{casual} queue = {v}, decided"),
        (
            "It was decided that {formal} will use {v} for messaging.",
            "{v} has been selected as the message broker for {formal}.",
        ),
        (", after comparing three options", ", because the team already runs it"),
        (
            "The decision record has the details.",
            "Revisit if throughput needs grow tenfold.",
        ),
    ),
    Family(
        "deadline",
        "project",
        ("15 June", "the end of Q3", "30 September", "early March"),
        (
            "{Name} must ship by {v}",
            "The deadline for {name} is {v}",
            "{Name} is planned to be done by {v}",
        ),
        ("{casual} due {v}", "{casual} has to be out by {v}"),
        (
            "The target completion date for {formal} is {v}.",
            "{Formal} is scheduled for delivery by {v}.",
        ),
        (", with a beta two weeks earlier", ", as promised to the sales team"),
        ("Slipping it needs sign-off from the director.", "Scope can be cut; the date cannot."),
    ),
    Family(
        "api",
        "project",
        ("REST with JSON", "GraphQL", "gRPC"),
        (
            "{Name} exposes a {v} API",
            "{Name}'s API is {v}",
            "Clients talk to {name} over {v}",
        ),
        ("{casual} api is {v}", "{casual} = {v} api"),
        (
            "{Formal} provides its interface via {v}.",
            "The public interface of {formal} is implemented with {v}.",
        ),
        (", with a generated client for the web app", "; versions are in the URL"),
        ("The schema lives next to the code.", "Breaking changes need a deprecation notice."),
    ),
    # the user the agent serves
    Family(
        "units",
        "user",
        ("metric units", "imperial units"),
        ("{Name} prefers {v}", "Use {v} with {name}", "{Name} wants figures in {v}"),
        ("{casual} likes {v}", "{v} for {casual} pls"),
        ("{Formal} has requested that {v} be used.", "All quantities for {formal}: {v}."),
        (", including temperatures", ", even in recipes"),
        ("Convert anything quoted from a source.", "Said so while planning the trip."),
    ),
    Family(
        "spelling",
        "user",
        ("British spelling", "American spelling"),
        ("{Name} wants {v}", "Write in {v} for {name}", "{Name} prefers {v} in documents"),
        ("{casual} → {v}", "{casual} wants {v}, remember"),
        ("{Formal} has asked for {v} throughout.", "Documents for {formal} use {v}."),
        (", in code comments as well", ", except in quoted text"),
        ("Corrected me twice on this.", "Applies to emails too."),
    ),
    Family(
        "emoji",
        "user",
        ("no emojis", "emojis in moderation", "plenty of emojis"),
        ("{Name} wants {v} in replies", "Use {v} with {name}", "{Name} prefers {v}"),
        ("{casual} says {v} pls", "{v} for {casual}"),
        ("{Formal} has requested {v} in responses.", "Responses to {formal}: {v}."),
        (", at least in chat", ", including in commit messages"),
        ("Mentioned it after the release notes draft.", "Applies to every channel."),
    ),
    Family(
        "dates",
        "user",
        ("YYYY-MM-DD", "DD/MM/YYYY", "MM/DD/YYYY"),
        (
            "{Name} wants dates written as {v}",
            "Format dates for {name} as {v}",
            "{Name} prefers dates in {v} form",
        ),
        ("dates as {v} for {casual}", "{casual} likes {v} dates"),
        ("{Formal} has asked that dates follow {v}.", "Date format for {formal}: {v}."),
        (", in reports and filenames", ", with the weekday when it matters"),
        ("Ambiguous dates caused a missed meeting once.", "Applies to spreadsheets too."),
    ),
    Family(
        "summary",
        "user",
        ("under 100 words", "one paragraph at most", "as long as needed"),
        (
            "{Name} wants summaries {v}",
            "Keep summaries for {name} {v}",
            "{Name} prefers summaries {v}",
        ),
        ("{casual} summaries: {v}", "summaries {v} for {casual}"),
        ("{Formal} has asked for summaries {v}.", "Summaries for {formal} should be {v}."),
        (", with a link to the source", ", with a bold first line"),
        ("Long ones go unread.", "Said so after the quarterly report."),
    ),
    Family(
        "address",
        "user",
        ("Sam", "Dr Reyes", "Samantha"),
        ("{Name} likes to be called {v}", "Address {name} as {v}", "{Name} goes by {v}"),
        ("call {casual} {v}", "{casual} goes by {v}"),
        ("{Formal} prefers to be addressed as {v}.", "{Formal} should be addressed as {v}."),
        (", in every message", ", including in emails to others"),
        ("Mentioned in the first conversation.", "Corrected me once on this."),
    ),
)

ONE_OFFS: tuple[tuple[str, str], ...] = (
    ("The VPN config lives in the infra repo under vpn/", ""),
    ("Staging uses the Stripe test keys; never paste live keys into it", ""),
    ("The design system's tokens are exported from Figma every sprint", ""),
    ("Load tests run against the perf environment, not staging", ""),
    (
        "Feature flags are managed in LaunchDarkly",
        "Old flags are cleaned up in the first week of each quarter.",
    ),
    ("The wiki's runbook index is the starting point for incidents", ""),
    ("Customer data must not leave the EU", "Legal confirmed this for every region we sell in."),
    ("Invoices are generated on the first business day of the month", ""),
    ("The mobile app supports iOS 16 and later", ""),
    ("Android builds are signed in CI with the upload key", ""),
    ("Use the shared service account for scheduled jobs, not personal tokens", ""),
    ("The office closes at 19:00 and the badge readers lock after that", ""),
    ("Expense reports go through Navan", "Receipts over 50 EUR need a photo."),
    ("The company all-hands is the first Wednesday of each month", ""),
    ("Interview loops have four sessions, one of them a system design round", ""),
    ("Security reviews are booked through the form on the security wiki page", ""),
    ("Production database access is granted for 24 hours at a time", ""),
    ("The CDN caches static assets for a week", "Bust it by changing the asset hash."),
    ("Incidents get a postmortem within five working days", ""),
    ("The search index is rebuilt from scratch every night", ""),
    ("Public API rate limit is 600 requests per minute per key", ""),
    ("The staging cluster is shut down at weekends to save money", ""),
    ("Onboarding buddies are assigned by the engineering manager", ""),
    ("The legacy admin panel is read-only since the spring", ""),
    ("Error budgets are reviewed at the monthly reliability meeting", ""),
    ("Translations are handled by an agency through Crowdin", ""),
    ("The user is training for a half marathon in October", ""),
    ("The user's cat is called Miso", ""),
    ("The user is learning Rust in the evenings", "Prefers exercises over reading."),
    ("The user drives an electric car and charges it at work", ""),
    ("The user is moving flats at the end of the month", ""),
    ("Quarterly planning starts two weeks before the quarter ends", ""),
    ("Docs are written in Markdown and published with MkDocs", ""),
    ("The monorepo's CI takes about 25 minutes on a full run", ""),
    ("Dependabot pull requests are merged by whoever is on support duty", ""),
    ("Hackathon week is in November", ""),
    ("Laptops are replaced every three years", ""),
    ("Secrets are stored in Vault and injected at deploy time", ""),
    ("The analytics events schema is owned by the growth team", ""),
    ("Bug bounty reports are triaged within two days", ""),
    ("The coffee machine on the third floor is broken again", ""),
    ("Contractors get access to the main repo only, not infra", ""),
)

PROVENANCE: tuple[str, ...] = (
    "Learned during onboarding.",
    "From the 1:1 on 3 April.",
    "Source: the team wiki.",
    "Mentioned in the general channel.",
    "Confirmed by email last week.",
    "Came up in Monday's planning meeting.",
    "Noted during the incident review.",
    "Told me directly.",
)


@dataclass(frozen=True, slots=True)
class Note:
    """One note of the corpus: what a memory holds, and what it is labelled with."""

    description: str
    body: str
    family: str  # the attribute ("one-off:<n>" for a note of no family)
    entity: str  # whom or what it is about
    fact: str  # notes of one fact are near-copies

    @property
    def text(self) -> str:
        """What ``retain dedup`` embeds: the description, and the body on the next line."""
        return f"{self.description}\n{self.body}" if self.body else self.description


@dataclass(frozen=True, slots=True)
class Corpus:
    """Notes and the labels of their pairs: the near-copies (pair of places → kind) and the
    related but distinct pairs (→ kind); a pair is ``(i, j)`` with ``i < j``."""

    notes: tuple[Note, ...]
    near: dict[tuple[int, int], str]
    related: dict[tuple[int, int], str]

    def kind(self, i: int, j: int) -> str:
        """The label of any pair: a near-copy's or related pair's kind, ``same_attribute``
        (one family, two entities) or ``unrelated``."""
        pair = (min(i, j), max(i, j))
        if pair in self.near:
            return self.near[pair]
        if pair in self.related:
            return self.related[pair]
        same = self.notes[i].family == self.notes[j].family
        return "same_attribute" if same else "unrelated"


@dataclass(frozen=True, slots=True)
class Written:
    """A note as a phrasing renders it, before it is labelled."""

    description: str
    body: str
    phrasing: str  # the template it was written from


def render(template: str, entity: Entity, value: Any) -> str:
    they_are = {"her": "she is", "his": "he is"}.get(entity.their, "they are")
    return template.format(**entity.fields(), v=value, they_are=they_are)


def written(phrasing: str, entity: Entity, value: Any) -> Written:
    return Written(render(phrasing, entity, value), "", phrasing)


def add_detail(
    rng: random.Random, family: Family, entity: Entity, value: Any, note: Written
) -> Written:
    """``note`` with a detail added: a clause at the end of its description, or a body."""
    if rng.random() < 0.5:
        clause = render(rng.choice(family.clauses), entity, value)
        stem, stop = (
            (note.description[:-1], ".")
            if note.description.endswith(".")
            else (note.description, "")
        )
        return Written(f"{stem}{clause}{stop}", "", note.phrasing)
    return Written(
        note.description, render(rng.choice(family.bodies), entity, value), note.phrasing
    )


def other_than(rng: random.Random, options: tuple[str, ...], taken: str) -> str:
    return rng.choice([o for o in options if o != taken])


def register_of(rng: random.Random) -> str:
    """A register drawn as notes are written: mostly neutral."""
    return rng.choices(("neutral", "casual", "formal"), weights=(3, 1, 1))[0]


def near_copy(
    rng: random.Random, family: Family, entity: Entity, value: Any, kind: str
) -> tuple[Written, Written]:
    """Two notes of one fact, the second a near-copy of ``kind`` of the first."""
    if kind == "register":
        casual = written(rng.choice(family.casual), entity, value)
        other = rng.choice(family.phrasings(rng.choice(("neutral", "formal"))))
        pair = [casual, written(other, entity, value)]
        rng.shuffle(pair)
        return pair[0], pair[1]
    phrasings = family.phrasings(register_of(rng))
    first = rng.choice(phrasings)
    if kind == "reworded":
        return written(first, entity, value), written(
            other_than(rng, phrasings, first), entity, value
        )
    second = first if rng.random() < 0.5 else other_than(rng, phrasings, first)
    detailed = add_detail(rng, family, entity, value, written(second, entity, value))
    return written(first, entity, value), detailed


@dataclass(frozen=True, slots=True)
class Draft:
    """A note with its labels, and the kind of near-copy it is of the note before it."""

    note: Note
    copy_kind: str | None = None


def family_notes(rng: random.Random, family: Family) -> list[Draft]:
    """One family's facts, with their planted near-copies and changed_value twins."""
    pool = ENTITIES[family.kind]
    drafts: list[Draft] = []
    for entity in rng.sample(pool, min(PER_KIND[family.kind], len(pool))):
        value, twin, *_ = rng.sample(family.values, len(family.values))
        fact = f"{family.name}/{entity.name}/{value}"
        kind = rng.choice(NEAR_KINDS) if rng.random() < P_COPY else None
        if kind is None:
            made = [written(rng.choice(family.phrasings(register_of(rng))), entity, value)]
        else:
            made = list(near_copy(rng, family, entity, value, kind))
        for place, note in enumerate(made):
            labelled = Note(note.description, note.body, family.name, entity.name, fact)
            drafts.append(Draft(labelled, kind if place else None))
        if rng.random() < P_CHANGED:
            same = rng.random() < 0.5  # the same phrasing, another value
            phrasing = made[0].phrasing if same else rng.choice(family.phrasings(register_of(rng)))
            changed = f"{family.name}/{entity.name}/{twin}"
            twin_note = Note(render(phrasing, entity, twin), "", family.name, entity.name, changed)
            drafts.append(Draft(twin_note))
    return drafts


def one_offs() -> list[Draft]:
    """The notes of no family; those about the user share their entity with its preferences."""
    drafts = []
    for n, (description, body) in enumerate(ONE_OFFS):
        entity = "the user" if description.startswith("The user") else f"one-off:{n}"
        family = f"one-off:{n}"
        drafts.append(Draft(Note(description, body, family, entity, f"{family}/{entity}")))
    return drafts


def label(notes: list[Note], kinds: dict[str, str]) -> Corpus:
    """The corpus of ``notes``, its pairs labelled from their facts; ``kinds`` gives each
    planted near-copy's kind by fact."""
    near: dict[tuple[int, int], str] = {}
    related: dict[tuple[int, int], str] = {}
    for i, j in itertools.combinations(range(len(notes)), 2):
        a, b = notes[i], notes[j]
        if a.fact == b.fact:
            near[(i, j)] = kinds[a.fact]
        elif a.entity == b.entity:
            related[(i, j)] = "changed_value" if a.family == b.family else "same_topic"
    return Corpus(tuple(notes), near, related)


def build(seed: int) -> Corpus:
    """The corpus of ``seed``: every family's facts and plants, the one-off notes, a
    provenance body on some, in a shuffled order."""
    rng = random.Random(seed)
    drafts = [d for family in FAMILIES for d in family_notes(rng, family)] + one_offs()
    kinds = {d.note.fact: d.copy_kind for d in drafts if d.copy_kind is not None}
    notes = []
    for draft in drafts:
        note = draft.note
        if not note.body and rng.random() < P_PROVENANCE:
            note = Note(
                note.description, rng.choice(PROVENANCE), note.family, note.entity, note.fact
            )
        notes.append(note)
    rng.shuffle(notes)
    return label(notes, kinds)
