"""A light local SparkSession for the statistics jobs (see docs/benchmarks.md for its figures)."""

from __future__ import annotations

import os
import re

from pyspark.sql import SparkSession

__all__ = ["DEFAULT_DRIVER_MEMORY", "build_spark_session", "jvm_pid", "spark_session_conf"]

#: Driver heap of a local session (``build_spark_session(driver_memory="4g")`` overrides it;
#: settings come only from the Settings object, never from the environment).
#: The benchmark (35 days x 3 nodes of per-second samples) peaks well below this.
DEFAULT_DRIVER_MEMORY = "2g"


def _cores(master: str) -> int:
    match = re.fullmatch(r"local\[(\d+|\*)(?:,\d+)?\]", master.strip())
    if match is None or match.group(1) == "*":
        return os.cpu_count() or 2
    return max(1, int(match.group(1)))


def spark_session_conf(
    master: str = "local[*]",
    driver_memory: str | None = None,
    shuffle_partitions: int | None = None,
    driver_host: str = "127.0.0.1",
) -> dict[str, str]:
    """The settings :func:`build_spark_session` applies (for tests and spark-submit users)."""
    memory = driver_memory or DEFAULT_DRIVER_MEMORY
    partitions = shuffle_partitions or 2 * _cores(master)
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": driver_host,
        "spark.driver.bindAddress": driver_host,
        "spark.driver.memory": memory,
        # The jobs shuffle at most a few hundred MB: a few partitions per core are plenty.
        "spark.sql.shuffle.partitions": str(partitions),
        "spark.default.parallelism": str(partitions),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # Local files: list input paths on the driver (a Spark listing job costs seconds).
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
        # DROPMALFORMED only checks the columns a query reads: always parse every column.
        "spark.sql.csv.parser.columnPruning.enabled": "false",
        "spark.sql.parquet.compression.codec": "zstd",
        "spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
        # No .crc side files: fewer files to create (without libhadoop, Hadoop forks a
        # `chmod` for each file and directory it creates) and nothing for the manifest to skip.
        "spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
        "spark.sql.adaptive.enabled": "true",
    }


def build_spark_session(
    master: str = "local[*]",
    app_name: str = "pushgrid-stats",
    *,
    driver_memory: str | None = None,
    shuffle_partitions: int | None = None,
    java_options: str | None = None,
    log_level: str = "WARN",
    driver_host: str = "127.0.0.1",
) -> SparkSession:
    """A SparkSession with the light settings of the statistics jobs.

    UI off, two shuffle partitions per core (or ``shuffle_partitions``), driver bound to
    ``driver_host`` (127.0.0.1; executors on other hosts need an address they can reach),
    UTC session time zone, Arrow on for ``toPandas()``. Driver memory (default 2g)
    only applies when this call starts the JVM; if a
    session already exists it is reused and the runtime settings (time zone, shuffle
    partitions, Arrow...) are applied to it.
    """
    builder = SparkSession.builder.master(master).appName(app_name)
    conf = spark_session_conf(master, driver_memory, shuffle_partitions, driver_host)
    if java_options:
        conf["spark.driver.extraJavaOptions"] = java_options
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    _guard_jvm(spark)
    for key in (
        "spark.sql.session.timeZone",
        "spark.sql.shuffle.partitions",
        "spark.sql.execution.arrow.pyspark.enabled",
        "spark.sql.csv.parser.columnPruning.enabled",
        "spark.sql.parquet.compression.codec",
        "spark.sql.sources.parallelPartitionDiscovery.threshold",
    ):
        spark.conf.set(key, conf[key])
    spark.sparkContext.setLogLevel(log_level)
    return spark


def jvm_pid(spark: SparkSession) -> int | None:
    """The pid of the Spark JVM this process launched (None: not ours, e.g. spark-submit)."""
    gateway = spark.sparkContext._gateway
    proc = getattr(gateway, "proc", None)
    pid = getattr(proc, "pid", None)
    return pid if isinstance(pid, int) else None


_guarded: set[int] = set()


def _guard_jvm(spark: SparkSession) -> None:
    """One watchdog per JVM we launched: the JVM dies with this driver (spark_stats.watchdog)."""
    from .watchdog import guard

    pid = jvm_pid(spark)
    if pid is not None and pid not in _guarded:
        guard(pid)
        _guarded.add(pid)
