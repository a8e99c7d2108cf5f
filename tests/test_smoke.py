from retain.service import MemoryService


def test_write_then_search_finds_the_memory(service: MemoryService) -> None:
    service.write("tz", description="Alice is in UTC+8", body="She lives in Singapore")
    hits = service.search("singapore").hits
    assert [h.memory.name for h in hits] == ["tz"]
