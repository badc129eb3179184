"""The statistics pipeline's part: the SQL store, the warehouse and Spark."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class StatsSettings(BaseModel):
    """What ``pushgrid stats run`` (PySpark) and the SQL store need."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    database: str = Field(default="sqlite:///data/pushgrid.db", alias="Database")
    stats_warehouse: Path = Field(default=Path("data/warehouse"), alias="StatsWarehouse")
    spark_master: str = Field(default="local[*]", alias="SparkMaster")
    stats_interval: float = Field(default=300.0, ge=0, alias="StatsInterval")
    # the address executors reach the driver at (a cluster on other hosts needs a routable one)
    spark_driver_host: str = Field(default="127.0.0.1", min_length=1, alias="SparkDriverHost")
    spark_driver_memory: str = Field(
        default="2g", pattern=r"^[1-9][0-9]*[kmgKMG]$", alias="SparkDriverMemory"
    )
