"""Monitoring: an in-process MBean registry and the Jolokia protocol agent that exposes it."""
