"""Small pieces every part shares and none owns: addresses, redaction of secrets, supervised
periodic tasks, the authentication throttle and the JMX query client.

The kernel imports nothing of ours but ``pushgrid.protocol`` (its exception tree), so the server,
the admin API, the console and the pipeline can all use it without depending on each other.
"""
