"""What a local chat model sees: the case's tools (canonical JSON schema, as every benchmark's
cases carry them) in OpenAI form and our messages in the chat template's form, in `native` mode
(the template renders the tools) or `prompt` mode (the tools are described in a fixed, versioned
system prompt, for templates without tool support).

Assistant messages are rendered as the raw text the model emitted (calls included, in the model's
own syntax), as BFCL's own local-model handlers do: the model sees exactly what it said, and a
conversation's next prompt extends the previous one (so its KV cache is reused). Calls that have
no text (structured calls from elsewhere) go through the template's `tool_calls` (native) or are
written as `<tool_call>` blocks (prompt).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any, Literal

from jinja2 import TemplateError

from toolcalib.backends.base import ContextOverflow, InfrastructureError, Request
from toolcalib.jsonio import InputError
from toolcalib.records import Emission, Message

ToolsMode = Literal["native", "prompt"]

PROMPT_VERSION = "tools-prompt-v1"
TOOLS_PROMPT = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    "{tools}\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>'
)
"""Prompt mode's tool description: the Hermes/Qwen2.5 tool prompt, word for word, so both modes
present tools the same way. Changing it means a new PROMPT_VERSION (it enters the identity)."""


def openai_tool(doc: dict[str, Any], drop: Collection[str]) -> dict[str, Any]:
    """A case's function doc (canonical JSON schema) as an OpenAI tool, without the members
    `drop` names (the benchmark's own: `Request.extras`)."""
    function = {key: value for key, value in doc.items() if key not in drop}
    return {"type": "function", "function": function}


def _call_text(name: str, arguments: dict[str, Any]) -> str:
    return ("<tool_call>\n" + json.dumps({"name": name, "arguments": arguments},
                                         ensure_ascii=False) + "\n</tool_call>")


def template_messages(messages: list[Message], tools: list[dict[str, Any]],
                      mode: ToolsMode) -> list[dict[str, Any]]:
    """Our messages as chat-template messages. In prompt mode the tool prompt joins the system
    message and tool results become user messages of `<tool_response>` blocks (consecutive
    results share one message, as in Qwen2.5's template)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            out.append(_assistant(message, mode))
        elif message.role == "tool" and mode == "prompt":
            block = f"<tool_response>\n{message.content}\n</tool_response>"
            if out and out[-1].get("tool_results"):
                out[-1]["content"] += "\n" + block
            else:
                out.append({"role": "user", "content": block, "tool_results": True})
        elif message.role == "tool":
            out.append({"role": "tool", "content": message.content, "name": message.name})
        else:
            out.append({"role": message.role, "content": message.content})
    if mode == "prompt" and tools:
        prompt = TOOLS_PROMPT.format(
            tools="\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools))
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + prompt}
        else:
            out.insert(0, {"role": "system", "content": prompt})
    for entry in out:
        entry.pop("tool_results", None)
    return out


def _assistant(message: Message, mode: ToolsMode) -> dict[str, Any]:
    if message.content or not message.tool_calls:
        return {"role": "assistant", "content": message.content}
    if mode == "prompt":
        return {"role": "assistant",
                "content": "\n".join(_call_text(c.name, c.arguments) for c in message.tool_calls)}
    return {"role": "assistant", "content": "",
            "tool_calls": [{"type": "function",
                            "function": {"name": c.name, "arguments": c.arguments}}
                           for c in message.tool_calls]}


def render(tokenizer: Any, messages: list[Message], tools: list[dict[str, Any]],
           mode: ToolsMode, drop: Collection[str]) -> list[int]:
    """The prompt's token ids, ending with the template's generation prompt (the tools without
    the members `drop` names)."""
    converted = [openai_tool(doc, drop) for doc in tools]
    native = converted if mode == "native" and converted else None
    text = tokenizer.apply_chat_template(template_messages(messages, converted, mode), tools=native,
                                         add_generation_prompt=True, tokenize=False)
    ids: list[int] = tokenizer(text, add_special_tokens=False)["input_ids"]
    return ids


def request_prompt(tokenizer: Any, request: Request, mode: ToolsMode, keep_extras: bool,
                   max_new_tokens: int, window: int) -> list[int] | InfrastructureError:
    """The request's prompt ids, or why it has none: the chat template failed, or the prompt
    and `max_new_tokens` outgrow the context `window` (a `ContextOverflow`, never truncated).
    `keep_extras`: show the benchmark's own members of the tool docs (`Request.extras`)."""
    try:
        prompt = render(tokenizer, request.messages, request.tools, mode,
                        () if keep_extras else request.extras)
    except TemplateError as exc:
        return InfrastructureError(f"chat template failed: {exc}")
    if len(prompt) + max_new_tokens > window:
        return ContextOverflow(f"prompt of {len(prompt)} tokens + max_new_tokens "
                               f"{max_new_tokens} exceeds the context window of {window}")
    return prompt


def emission(tokenizer: Any, prompt: list[int], generated: list[int], stopped: bool) -> Emission:
    """The raw text of `generated` (its stop token dropped) and its token counts."""
    text_ids = generated[:-1] if stopped else generated
    return Emission(text=tokenizer.decode(text_ids, skip_special_tokens=False),
                    finish_reason="stop" if stopped else "length",
                    input_tokens=len(prompt), output_tokens=len(generated))


def message_start_ids(tokenizer: Any, stop_ids: set[int]) -> set[int]:
    """The special tokens that open every message of the chat template (ChatML's
    `<|im_start|>`): those other than stop tokens found at least once per message of a rendered
    three-message conversation. Prefill chunks are cut at them (see `hf.engine`)."""
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                {"role": "user", "content": "c"}]
    ids = tokenizer(tokenizer.apply_chat_template(messages, tokenize=False),
                    add_special_tokens=False)["input_ids"]
    special = set(tokenizer.all_special_ids) | {
        i for i, token in tokenizer.added_tokens_decoder.items() if token.special}
    return {i for i in special - stop_ids if ids.count(i) >= len(messages)}


def chunk_cuts(prompt: list[int], chunk: int, cut_ids: set[int]) -> list[int]:
    """0, every multiple of `chunk` and every position holding a token of `cut_ids` below the
    prompt's length, then the length: prefill chunks lie between consecutive cuts, so whether a
    position is a cut depends only on its own token and two prompts sharing a prefix cut it
    alike (see `hf.engine`)."""
    marked = (i for i, token in enumerate(prompt) if token in cut_ids)
    return sorted({0, *range(chunk, len(prompt), chunk), *marked, len(prompt)})


def check_tools_mode(tokenizer: Any, mode: ToolsMode, name: str, model_dir: str) -> None:
    """`native` mode needs a chat template that renders tools."""
    if mode == "native" and "tools" not in (tokenizer.chat_template or ""):
        raise InputError(f"model '{name}': the chat template of {model_dir} does not "
                         "render tools; use tools_mode 'prompt'")
