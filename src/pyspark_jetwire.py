"""Auto-registration of jetwire's ``jetstream`` PySpark data source.

Spark imports every top-level ``pyspark_*`` module on the Python path and registers its
``DefaultSource``, so ``format("jetstream")`` works without ``jetwire.spark.register``.
This module must never raise on import: a failing ``pyspark_*`` module breaks the lookup
of every Python data source. Without pyspark/pyarrow (the ``spark`` extra) it simply
defines nothing.
"""
try:
    from jetwire.spark import JetStreamDataSource as DefaultSource  # noqa: F401
except Exception:
    pass
