// DSH Web stand-in page. Every URL is relative to <base href="./">, so the
// page works unchanged under a path prefix such as /u/<user>/.
"use strict";

const $ = (id) => document.getElementById(id);
const maxEvents = 20;

function setStatus(text) {
  $("status").textContent = text;
}

async function loadConversation() {
  const res = await fetch("api/messages", { headers: { Accept: "application/json" } });
  if (!res.ok) {
    setStatus("conversation: HTTP " + res.status);
    return false;
  }
  const messages = await res.json();
  const list = $("conversation");
  list.replaceChildren(...messages.map((m) => {
    const li = document.createElement("li");
    li.dataset.seq = String(m.seq);
    li.textContent = m.text;
    return li;
  }));
  list.dataset.count = String(messages.length);
  return true;
}

function setupMessageForm() {
  $("message-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const input = $("message-text");
    const res = await fetch("api/messages", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ text: input.value }),
    });
    if (!res.ok) {
      setStatus("send: HTTP " + res.status);
      return;
    }
    input.value = "";
    await loadConversation();
  });
}

// Date.parse takes milliseconds at most; the server sends nanoseconds.
function parseTime(s) {
  return Date.parse(s.replace(/(\.\d{3})\d+/, "$1"));
}

function setupEvents() {
  const list = $("events");
  const source = new EventSource("api/events");
  source.onopen = () => { list.dataset.state = "open"; };
  source.onerror = () => { list.dataset.state = "error"; };
  source.onmessage = (ev) => {
    const data = JSON.parse(ev.data);
    const delay = Date.now() - parseTime(data.sent);
    const li = document.createElement("li");
    li.dataset.seq = String(data.seq);
    li.textContent = "#" + data.seq + " sent " + data.sent + " (arrived after " + delay + " ms)";
    list.prepend(li);
    while (list.children.length > maxEvents) {
      list.lastElementChild.remove();
    }
    const count = Number(list.dataset.count) + 1;
    list.dataset.count = String(count);
    list.dataset.lastSeq = String(data.seq);
    $("event-count").textContent = String(count);
  };
}

function setupWebSocket() {
  const url = new URL("api/ws", document.baseURI);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(url);
  const state = $("ws-status");
  ws.onopen = () => {
    state.textContent = "open";
    ws.send("hello from the page");
  };
  ws.onclose = (ev) => { state.textContent = "closed " + ev.code; };
  ws.onerror = () => { state.textContent = "error"; };
  ws.onmessage = (ev) => {
    if (typeof ev.data !== "string") {
      return;
    }
    if (ev.data.startsWith("tick ")) {
      $("ws-ticks").textContent = ev.data;
      return;
    }
    $("ws-echo").textContent = ev.data;
  };
  $("ws-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const input = $("ws-text");
    if (ws.readyState === WebSocket.OPEN && input.value !== "") {
      ws.send(input.value);
      input.value = "";
    }
  });
}

async function main() {
  setupMessageForm();
  setupEvents();
  setupWebSocket();
  try {
    if (await loadConversation()) {
      setStatus("ready");
    }
  } catch (err) {
    setStatus("error: " + err);
  }
}

main();
