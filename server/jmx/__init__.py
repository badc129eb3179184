"""Real JMX for pushgrid: the JVM bridge (deploy/jmx/Bridge.java), jmxquery reads, checks."""
