"""The scripts that run on the instance, standard library only (Python 3.10): the watchdog, the bootstrap, the CI job
agent, what they share (``cloud_access``) and the loader that fetches them (``fetch_tools``).

They are not imported by the program: ``components.userdata`` reads them as files and ships them in the instance's
user-data and tools object. The package exists so that tests can import them.
"""
