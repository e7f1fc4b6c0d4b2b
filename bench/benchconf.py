"""The configuration a Python benchmark runs with: the shipped one
($SBX_CONF, else etc/sandbox.conf) with its state and history in a
temporary directory of its own, so that nothing it does stays."""
import os, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def temp_conf(name):
    """(the temporary directory, the configuration file in it)"""
    src = os.environ.get("SBX_CONF", os.path.join(ROOT, "etc", "sandbox.conf"))
    tmp = tempfile.mkdtemp(prefix="sbx-bench-%s." % name)
    conf = os.path.join(tmp, "sandbox.conf")
    with open(src) as f, open(conf, "w") as g:
        for line in f:
            if line.startswith("state_dir"):
                line = 'state_dir = "%s/var"\n' % tmp
            elif line.startswith("history "):
                line = 'history = "%s/var/history.db"\n' % tmp
            g.write(line)
    return tmp, conf
