"""The Lua scripts of the Redis store: their source, registration and calls.

Also the encoding the store uses around Redis: the scripts' node ARGV
(:func:`node_args`) and reply text (:func:`reply_text`, for clients with
``decode_responses`` either way).

Every write of :class:`srh_workers.store.RedisRunStore` is one of
these scripts (``srh_workers/store/lua``), atomic and idempotent by node id or by
(node id, canonical key); reads that combine keys are scripts too, so they
see one consistent state. :class:`RunScripts` registers them on a client
once and calls them by name, directly or queued on a pipeline.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

from srh_core.jsonio import dumps
from srh_core.types import SearchNode

if TYPE_CHECKING:
    from redis import Redis
    from redis.commands.core import Script

SCRIPTS = ("record_node", "push_candidate", "record_sample", "claim", "finish_branch",
           "level_done", "release", "set_ttl", "ranked", "values", "publish_events",
           "save_plan", "store_result")
_USES_LIB = frozenset({"record_node", "push_candidate", "record_sample"})


@functools.cache
def script_source(name: str) -> str:
    """Lua text of one script; the pool writers get ``lib.lua`` prepended."""
    folder = resources.files("srh_workers.store").joinpath("lua")
    body = folder.joinpath(f"{name}.lua").read_text(encoding="utf-8")
    if name in _USES_LIB:
        return folder.joinpath("lib.lua").read_text(encoding="utf-8") + "\n" + body
    return body


class RunScripts:
    """Every script of :data:`SCRIPTS`, registered on ``client``."""

    def __init__(self, client: Redis) -> None:
        self._scripts: dict[str, Script] = {
            name: client.register_script(script_source(name)) for name in SCRIPTS}

    def call(self, name: str, keys: Sequence[str], args: Sequence[Any], client: Any = None
             ) -> Any:
        """Run script ``name`` (on ``client``, e.g. a pipeline, when given) and return its reply."""
        return self._scripts[name](keys=list(keys), args=list(args), client=client)


def node_args(node: SearchNode) -> tuple[str, str, str]:
    """The ARGV of the node writers: node id, record JSON and detail JSON."""
    return node.node_id, dumps(node.to_dict(include_detail=False)), dumps(node.detail)


def reply_text(value: bytes | str) -> str:
    """A Redis reply as text, whether or not the client decodes responses."""
    return value.decode("utf-8") if isinstance(value, bytes) else value


__all__ = ["SCRIPTS", "RunScripts", "node_args", "reply_text", "script_source"]
