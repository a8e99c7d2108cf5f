"""Doors for the frameworks agent builders already use: each translates a framework's
calls into the session's verbs and its results back, and holds no rule of its own.

* ``retain.integrations.langgraph``: ``RetainStore``, a LangGraph ``BaseStore`` (and so
  LangMem's memory tools) over a retain session (``pip install 'retain[langgraph]'``);
* ``retain.integrations.mem0``: ``Memory``, mem0's calls and result shapes over a
  retain session (no dependency on mem0).
"""
