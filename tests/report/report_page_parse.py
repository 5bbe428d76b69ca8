"""Read a report page back with the standard library's HTML parser."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class PageFacts:
    tags: list[str] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)  # every src / href value
    images: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)  # title="..." attribute values

    @property
    def joined_text(self) -> str:
        return " ".join(self.text)


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.facts = PageFacts()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.facts.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href") and value is not None:
                self.facts.resources.append(value)
            if name == "title" and value is not None:
                self.facts.titles.append(value)
        if tag == "img":
            self.facts.images.append(dict(attrs).get("src") or "")

    def handle_data(self, data: str) -> None:
        if data.strip():
            self.facts.text.append(data.strip())


def parse_page(html: str) -> PageFacts:
    collector = _Collector()
    collector.feed(html)
    collector.close()
    return collector.facts
