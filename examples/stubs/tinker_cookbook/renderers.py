"""Stand-in for tinker_cookbook.renderers: get_text_content only."""


def get_text_content(message):
    content = message.get("content", "")
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
