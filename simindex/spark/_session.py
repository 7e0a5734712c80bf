"""The command's SparkSession, and its failures said in one line.

Workers. Spark starts its Python workers with ``PYSPARK_PYTHON``, else
``python3`` from PATH: a venv's Python run without activating the venv (or any
Python but PATH's) has workers that cannot import simindex. In local mode the
workers run on this machine, so they run the driver's Python
(``sys.executable``) unless the user named one (``PYSPARK_PYTHON``, or
``spark.pyspark.python``). On a cluster Spark's choice stands: the executors'
Python is the cluster's business.

Quiet. When the command starts Spark's JVM itself (``python -m
simindex.spark``, not under spark-submit), the JVM's stderr (its log, at
Spark's default level, and its workers') goes to a file, so the terminal
shows the command's own lines only; ``--verbose`` leaves it on stderr. The
file is removed when the command ends, unless Spark failed: then the
``Error:`` line names it. Under spark-submit, Spark's logging is as its
configuration says.

Failures. ``describe`` turns an exception from Spark (a JVM error through
py4j, a PySparkException, the JVM gone) into what went wrong and what to
do. Spark's errors carry their cause as text only (a Python worker's
traceback, a Java stack), so the known causes are recognised in it.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_LOCAL_PARTITIONS = 8  # Spark's 200 shuffle partitions are for clusters
_MISSING = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")
_MEMORY = ("OutOfMemoryError", "Java heap space", "MemoryError", "exceeding memory limits")


def start(master: str | None, conf: dict[str, str], *, log: IO[bytes] | None) -> SparkSession:
    """The session for the command: ``master`` and ``conf`` (``--conf``) set;
    Spark's JVM, when this starts it, writing its stderr to ``log`` (None:
    to this process's stderr); workers in local mode running this Python."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    settings = SparkConf().setAppName("simindex dedup")
    if master is not None:
        settings.setMaster(master)
        if master.startswith("local"):
            settings.set("spark.sql.shuffle.partitions", str(_LOCAL_PARTITIONS))
    for key, value in conf.items():
        settings.set(key, value)
    # A JVM to start (not one spark-submit started, nor one this process has)
    if log is not None and not launched() and SparkContext._gateway is None:
        from pyspark.java_gateway import launch_gateway

        settings.setIfMissing("spark.ui.showConsoleProgress", "false")
        gateway = launch_gateway(settings, popen_kwargs={"stderr": log})  # type: ignore[no-untyped-call,unused-ignore]
        SparkContext(conf=settings, gateway=gateway)
    spark = SparkSession.builder.config(conf=settings).getOrCreate()
    context = spark.sparkContext
    if (context.master or "").startswith("local") and not os.environ.get("PYSPARK_PYTHON"):
        context.pythonExec = context.getConf().get("spark.pyspark.python") or sys.executable
    return spark


def launched() -> bool:
    """Whether spark-submit started this process (and its JVM)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def is_spark_error(exc: BaseException) -> bool:
    """Whether ``exc`` came from Spark: its JVM (py4j), pyspark, or the loss of either."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    return isinstance(exc, (Py4JError, PySparkException, ConnectionError))


def describe(exc: BaseException) -> str:
    """What went wrong in Spark and what to do, in one line."""
    return known(exc) or f"Spark failed: {_text(exc)[1]}"


def known(exc: BaseException) -> str | None:
    """``describe``'s line for a failure of Spark's own (its workers' Python,
    memory, its Java process), not of the data; None for any other."""
    from py4j.protocol import Py4JNetworkError
    from pyspark.errors import PySparkException

    text = _text(exc)[0]
    if found := _MISSING.search(text):
        return (
            f"Spark's Python workers ({_workers_python()}) cannot import "
            f"{found.group(1).split('.')[0]}: install 'simindex[spark]' for the Python every "
            f"executor runs, or name one that has it in PYSPARK_PYTHON "
            f"(spark.pyspark.python on a cluster)"
        )
    if said := [line.strip() for line in text.splitlines() if any(s in line for s in _MEMORY)]:
        return f"Spark ran out of memory ({said[-1][:200]}): give it more ({_more_memory()})"
    if isinstance(exc, PySparkException) and exc.getCondition() == "JAVA_GATEWAY_EXITED":
        return (
            "Spark's Java process did not start: check that `java -version` (or "
            "$JAVA_HOME/bin/java's) says 17 or later, and any --conf given"
        )
    if isinstance(exc, (Py4JNetworkError, ConnectionError)) or "Python worker exited" in text:
        return (
            f"a Spark process ended before the job did (killed, or out of memory?): give it "
            f"more memory ({_more_memory()}) and run the command again"
        )
    return None


def _more_memory() -> str:
    if launched():
        return "spark-submit --driver-memory 8g --executor-memory 8g"
    return "--conf spark.driver.memory=8g; on a cluster, spark.executor.memory too"


def _text(exc: BaseException) -> tuple[str, str]:
    """All an exception says (its message, its Java causes', its Python
    cause's), and the line that says it best: the deepest Java cause's, else
    the message's first line. py4j asks the JVM for a Java error's text; the
    JVM may be gone, and then what was read is what there is."""
    parts, reason = [], ""
    with contextlib.suppress(Exception):
        parts.append(str(exc))
    java = getattr(exc, "java_exception", None)
    with contextlib.suppress(Exception):
        while java is not None:
            reason = str(java.toString())
            parts.append(reason)
            java = java.getCause()
    cause = exc.__cause__ or exc.__context__
    if cause is not None:
        with contextlib.suppress(Exception):
            parts.append(f"{type(cause).__name__}: {cause}")
    if not reason.strip():
        reason = next((line for line in "\n".join(parts).splitlines() if line.strip()), "")
    first = reason.strip().splitlines()[0][:300] if reason.strip() else type(exc).__name__
    return "\n".join(parts), first


def _workers_python() -> str:
    """The Python Spark's workers run (as start() left it)."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is not None:
        return str(context.pythonExec)
    return os.environ.get("PYSPARK_PYTHON") or "python3"
