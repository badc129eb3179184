"""The typed ops contract: what a member's MBeans are called, which attributes they have and what
their values are, written once for the server that serves them, the admin API that reads them and
the console that shows the admin API's answers (docs/architecture.md, "Ops contract"; ADR 035).

It imports only ``pushgrid.protocol`` and msgspec/pydantic, so every part may import it.

* :mod:`.names`: the MBean object names and operation names;
* :mod:`.attributes`: how a document's fields become MBean attributes (name, Java type,
  description) and how an answer is decoded back into the document;
* :mod:`.server`, :mod:`.cluster`, :mod:`.indicator`, :mod:`.subjects`: the documents of the
  Server, Cluster, Indicator and Subjects MBeans;
* :mod:`.panel`: the member panel, one type from the probe to the console;
* :mod:`.api`: the admin API's answers that the console reads, one pydantic model each for the
  route that sends it and the console that decodes it (ADR 059).
"""
