"""ROC4xx: graph breaks inside compiled code.

Compiled code is a function decorated with ``@torch.compile`` (with or without arguments),
a function compiled by assignment (``f = torch.compile(f)``, ``self.forward =
torch.compile(self.forward)``), or the ``forward`` of a module whose instance is compiled
(``model = torch.compile(Model())``, ``self.net = torch.compile(self.net)``), followed
through the calls it makes to functions and methods of the same file: the shared analysis
(``_regions``) walks each compiled function and lists what the code it reaches does as typed
events (``_events``); each rule below picks its events in ``on_event`` and writes its own
message. Code under ``@torch.compiler.disable`` / ``torch._dynamo.disable`` is an eager
island: it is neither reported nor followed.
"""
