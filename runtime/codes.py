"""Every diagnostic code the runtime raises, with its meaning (docs/diagnostics.md lists them;
a test keeps the two in step)."""
from __future__ import annotations

RUNTIME_CODES: dict[str, str] = {
    "ORDER_TASK_RACE": "a recorded task-graph run in which two tasks touched a common byte, one writing it, "
                       "and the graph orders neither before the other (a missing dependency edge)",
    "ORDER_TASK_EARLY": "a recorded task-graph run in which a task started before a task the graph "
                        "orders before it had finished",
    "ORDER_TASK_REGION": "a kernel task of a task graph that writes bytes outside the regions= it declares, "
                         "or computes its results from bytes outside them (the verifier's region audit)",
    "RUNTIME_TASK_FAILED": "a task of a task graph failed; the message names the task, its label and kernel, "
                           "the notes carry the task's own error; tasks already running finished first",
    "PTO_TASK": "a task the graph cannot take, refused when it is added: no compiled executable or callable, "
                "a core type a kernel cannot have, args or regions not a dict, a region that is not a basic "
                "index of an array binding or holds no element, reads/writes not a list of the task's array "
                "bindings, a read-only binding written, blocks not an integer >= 1, cost not a finite number "
                ">= 0, a label not a string, after not a list, an edge to a task of another graph",
    "PTO_GRAPH_CYCLE": "explicit edges of a task graph that form a cycle (found before anything runs)",
    "PTO_EXECUTOR": "an unknown executor or scheduling policy, a bad executor option, or an executor whose "
                    "optional package is not installed",
    "PTO_GRAPH_FILE": "a task-graph file (pto graph) that is not valid JSON or does not follow the format",
}
