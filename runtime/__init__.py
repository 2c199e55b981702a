"""runtime: MPMD task graphs over compiled kernels (docs/runtime.md).

Build a ``TaskGraph`` of kernel, host and join tasks (dependencies from the bytes each reads
and writes), ``run`` it on an executor (``embedded`` threads, ``simulated`` on an Ascend
profile's cores, ``dask``) under a policy (``fifo``, ``lifo``, ``critical``), then ``verify``
the recorded run and draw it (``traces``)."""
from .executor import EXECUTORS, Executor, get_executor, run
from .graph import Task, TaskGraph
from .record import RunRecord, TaskRun
from .scheduler import FIFO, LIFO, POLICIES, CriticalPath, Policy
from .verify import problems, verify

__all__ = ["EXECUTORS", "FIFO", "LIFO", "POLICIES", "CriticalPath", "Executor", "Policy", "RunRecord", "Task",
           "TaskGraph", "TaskRun", "get_executor", "problems", "run", "verify"]
