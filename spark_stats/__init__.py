"""Statistics pipeline: PySpark jobs over the metrics archive, results in the SQL store."""
