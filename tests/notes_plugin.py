"""Source text shared by the test plug-ins: the methods of an agent that keeps every user message as a note
(everything but ``reply``, which each test plug-in writes to misbehave its own way)."""

NOTES_METHODS = """
    async def ingest(self, user, assistant, *, time=None):
        self.notes.append(user)
    async def answer(self, prompt):
        return json.dumps({"answer": 1})
    async def snapshot(self):
        return {"notes": list(self.notes)}
    def restore(self, snapshot):
        self.notes = list(snapshot["notes"])
    def memory_view(self):
        return "\\n".join(self.notes)
    def stats(self):
        return {"notes": len(self.notes)}
"""
