"""``kafkacompat record``'s machinery: a pass-through proxy that records client profiles (trio).

Every decision of a recording is the sans-I/O ``negotiation.recording``'s; this
package moves bytes (``proxy``) and keeps the profiles file current
(``writer``).  It is an application of the trio driver's layer, not a driver:
it sits above the drivers, beside the testing kit that loads it.
"""

from kafkacompat.recorder.proxy import RecordProxy, freeze_start_up
from kafkacompat.recorder.writer import ProfileWriter, write_lines

__all__ = ["ProfileWriter", "RecordProxy", "freeze_start_up", "write_lines"]
