"""Governance: the pure rules that decide what the store may hold and how far it is
trusted (secret detection and content trust today; tiers and tickets as they land).

Its modules are domain modules: they import the nouns (``retain.model``) and the
exception tree (``retain.errors``), never the service, storage or a door. The service
applies them where a row is admitted (``retain.service.admission``).
"""
