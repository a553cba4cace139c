"""Environment files are read whole again: the first read takes the whole file."""
import amemgym.families.statetrack.data.io as io


def _whole(self):
    if self.eof:
        return False
    chunk = self.fh.read()
    if not chunk:
        self.eof = True
        return False
    self.drop()
    self.buf += chunk
    return True


io._Stream.more = _whole
