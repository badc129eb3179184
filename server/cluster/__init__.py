"""The cluster: who the members are, the NATS node each member runs, and what a member sees.

``topology`` is pure (settings -> members, seeds, ports, the nats-server configuration);
``natsnode`` supervises the member's own ``nats-server`` child process; ``membership`` tracks the
other members through heartbeats on NATS; ``status`` is the read model the monitoring views format.
"""
