// The Better Compute console: sign in with a tenant's token, see the tenant's load balancers with
// their state kept live by EventService.WatchEvents, create one (every invalid field the server
// names is marked), and open one to see what it reaches, its events and usage, update or delete it.
// It calls the API of the server that serves it (same origin) through the TypeScript SDK.

import {
  createComputeClient,
  LoadBalancerNetwork,
  LoadBalancerNetworkStack,
  LoadBalancerTlsCipherPolicy,
  maskedUpdate,
  toPlatformError,
  ViolationsSchema,
  type ComputeClient,
  type Event,
  type LoadBalancer,
  type Pool,
  type Violation,
} from "./sdk.js";
import "./style.css";

// ---------- small DOM helpers ----------

type Attrs = Record<string, string | boolean | number | undefined | ((ev: globalThis.Event) => void)>;
type Child = Node | string | null | undefined | false;

function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === "function") el.addEventListener(k.replace(/^on/, ""), v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return el;
}

function $(sel: string, root: ParentNode = document): HTMLElement | null {
  return root.querySelector<HTMLElement>(sel);
}

function fmtTime(t: { seconds: bigint; nanos: number } | undefined): string {
  if (!t || (t.seconds === 0n && t.nanos === 0)) return "";
  return new Date(Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6)).toISOString().replace(".000Z", "Z");
}

function randomKey(): string {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return "console-" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((res) => {
    const t = setTimeout(res, ms);
    signal.addEventListener("abort", () => (clearTimeout(t), res()), { once: true });
  });

// ---------- state ----------

interface Session {
  tenantId: string;
  token: string;
}

const sessionKey = "bc.console.session";

const state = {
  session: null as Session | null,
  client: null as ComputeClient | null,
  lbs: new Map<string, LoadBalancer>(),
  pools: [] as Pool[],
  selected: null as string | null,
  cursor: 0n,
  watch: null as AbortController | null,
  live: "offline" as "offline" | "connecting" | "live" | "reconnecting",
  createKey: randomKey(),
};

const app = document.getElementById("app")!;

// ---------- sign in ----------

function renderSignIn(message = ""): void {
  const tenant = h("input", { id: "signin-tenant", name: "tenant", autocomplete: "username", required: true });
  const token = h("input", { id: "signin-token", name: "token", type: "password", autocomplete: "current-password", required: true });
  const err = h("p", { id: "signin-error", class: "error", role: "alert" }, message);
  const form = h(
    "form",
    { id: "signin", class: "card narrow", novalidate: true },
    h("h1", {}, "Better Compute"),
    h("p", { class: "muted" }, "Sign in with your tenant id and an API token (bct_…). The token stays in this tab only."),
    h("label", { class: "field" }, h("span", {}, "Tenant"), tenant),
    h("label", { class: "field" }, h("span", {}, "Token"), token),
    h("button", { type: "submit", id: "signin-submit" }, "Sign in"),
    err,
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void signIn({ tenantId: tenant.value.trim(), token: token.value.trim() }, err);
  });
  app.replaceChildren(form);
  tenant.focus();
}

async function signIn(s: Session, err: HTMLElement): Promise<void> {
  if (!s.tenantId || !s.token) {
    err.textContent = "Give the tenant id and the token.";
    return;
  }
  err.textContent = "Signing in…";
  const client = createComputeClient({ baseUrl: window.location.origin, token: s.token, defaultTimeoutMs: 30_000 });
  try {
    // The first list proves the token and the tenant: UNAUTHENTICATED, NOT_FOUND or ACCESS_DENIED stop here.
    await client.loadBalancers.listLoadBalancers({ tenantId: s.tenantId, pageSize: 1 });
  } catch (e) {
    const pe = toPlatformError(e);
    err.textContent =
      pe?.code === "UNAUTHENTICATED"
        ? "The token is not valid (unknown, expired or revoked)."
        : pe?.code === "ACCESS_DENIED" || pe?.code === "NOT_FOUND"
          ? `This token may not read tenant ${s.tenantId}'s load balancers.`
          : `Sign-in failed: ${pe?.message ?? String(e)}`;
    return;
  }
  sessionStorage.setItem(sessionKey, JSON.stringify(s));
  state.session = s;
  state.client = client;
  await startConsole();
}

function signOut(message = ""): void {
  state.watch?.abort();
  state.watch = null;
  sessionStorage.removeItem(sessionKey);
  state.session = null;
  state.client = null;
  state.lbs.clear();
  state.selected = null;
  renderSignIn(message);
}

// ---------- the console ----------

async function startConsole(): Promise<void> {
  const { client, session } = ready();
  renderShell();
  try {
    // The cursor first, then the list: a change between the two arrives as an event after it.
    state.cursor = await latestCursor();
    await loadAll();
    const { pools } = await client.pools.listPools({ tenantId: session.tenantId });
    state.pools = pools.filter((p) => p.state !== "archived");
  } catch (e) {
    return handleFatal(e);
  }
  renderList();
  renderCreateForm();
  const ctl = new AbortController();
  state.watch = ctl;
  void watchLoop(ctl.signal);
}

function ready(): { client: ComputeClient; session: Session } {
  if (!state.client || !state.session) throw new Error("not signed in");
  return { client: state.client, session: state.session };
}

function handleFatal(e: unknown): void {
  const pe = toPlatformError(e);
  if (pe?.code === "UNAUTHENTICATED") return signOut("The session ended: the token is no longer valid.");
  showBanner(`Error: ${pe?.message ?? String(e)}`);
}

async function latestCursor(): Promise<bigint> {
  const { client, session } = ready();
  let after = 0n;
  for (;;) {
    const { events } = await client.events.listEvents({ tenantId: session.tenantId, after, limit: 1000 });
    if (events.length === 0) return after;
    for (const e of events) if (e.cursor > after) after = e.cursor;
  }
}

async function loadAll(): Promise<void> {
  const { client, session } = ready();
  state.lbs.clear();
  let pageToken = "";
  do {
    const res = await client.loadBalancers.listLoadBalancers({ tenantId: session.tenantId, pageSize: 1000, pageToken });
    for (const lb of res.loadBalancers) state.lbs.set(lb.id, lb);
    pageToken = res.nextPageToken;
  } while (pageToken);
}

// watchLoop follows the tenant's events from the cursor; a dropped stream resumes where it was.
async function watchLoop(signal: AbortSignal): Promise<void> {
  let failures = 0;
  while (!signal.aborted) {
    const { client, session } = ready();
    setLive(failures === 0 ? "connecting" : "reconnecting");
    try {
      const stream = client.events.watchEvents({ tenantId: session.tenantId, after: state.cursor }, { signal });
      setLive("live");
      for await (const res of stream) {
        failures = 0;
        if (res.event) {
          state.cursor = res.event.cursor;
          await onEvent(res.event);
        }
      }
    } catch (e) {
      if (signal.aborted) return;
      const pe = toPlatformError(e);
      if (pe?.code === "UNAUTHENTICATED") return signOut("The session ended: the token is no longer valid.");
    }
    failures++;
    setLive("reconnecting");
    await sleep(Math.min(1000 * failures, 5000), signal);
  }
}

async function onEvent(e: Event): Promise<void> {
  if (!e.resourceId.startsWith("plb_")) return;
  await refreshLB(e.resourceId);
  if (state.selected === e.resourceId) {
    appendDetailEvent(e);
    void renderUsage(e.resourceId);
  }
}

async function refreshLB(id: string): Promise<void> {
  const { client, session } = ready();
  try {
    const { loadBalancer } = await client.loadBalancers.getLoadBalancer({ tenantId: session.tenantId, loadBalancerId: id });
    if (!loadBalancer || loadBalancer.state === "deleted") state.lbs.delete(id);
    else state.lbs.set(id, loadBalancer);
  } catch (e) {
    if (toPlatformError(e)?.code !== "NOT_FOUND") return;
    state.lbs.delete(id);
  }
  renderList();
  if (state.selected === id) renderDetailFields(id);
}

function setLive(s: typeof state.live): void {
  state.live = s;
  const el = $("#live");
  if (el) {
    el.textContent = s;
    el.dataset["state"] = s;
  }
}

function showBanner(text: string): void {
  const el = $("#banner");
  if (el) el.textContent = text;
}

function renderShell(): void {
  const { session } = ready();
  app.replaceChildren(
    h(
      "header",
      {},
      h("strong", {}, "Better Compute"),
      h("span", { class: "muted" }, " tenant "),
      h("code", { id: "tenant" }, session.tenantId),
      h("span", { id: "live", "data-state": state.live }, state.live),
      h("button", { id: "signout", type: "button", class: "link", onclick: () => signOut() }, "Sign out"),
    ),
    h("p", { id: "banner", class: "error", role: "alert" }),
    h(
      "main",
      {},
      h(
        "section",
        { id: "list-section", class: "card" },
        h("h2", {}, "Load balancers"),
        h("table", { id: "lbs" }, h("thead", {}, h("tr", {}, ...["Name", "State", "Region", "Address", "Id"].map((c) => h("th", {}, c)))), h("tbody")),
        h("p", { id: "lbs-empty", class: "muted" }, "None yet."),
        h("div", { id: "create-section" }),
      ),
      h("section", { id: "detail", class: "card", hidden: true }),
    ),
  );
}

function renderList(): void {
  const tbody = $("#lbs tbody");
  if (!tbody) return;
  const rows = [...state.lbs.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  tbody.replaceChildren(
    ...rows.map((lb) =>
      h(
        "tr",
        {
          "data-lb-id": lb.id,
          "data-name": lb.name,
          class: lb.id === state.selected ? "selected" : undefined,
          onclick: () => void openDetail(lb.id),
        },
        h("td", {}, h("a", { href: `#${lb.id}`, onclick: (ev) => ev.preventDefault() }, lb.name)),
        h("td", { class: "state", "data-state": lb.state }, lb.state),
        h("td", {}, lb.region || lb.scope),
        h("td", { class: "address" }, lb.address),
        h("td", {}, h("code", {}, lb.id)),
      ),
    ),
  );
  const empty = $("#lbs-empty");
  if (empty) empty.hidden = rows.length > 0;
}

// ---------- forms and violations ----------

const protocols = ["http", "https", "http2", "tcp", "udp"];

function field(path: string, label: string, control: HTMLElement): HTMLElement {
  control.setAttribute("data-input", path);
  return h("label", { class: "field", "data-field": path }, h("span", {}, label), control, h("small", { class: "msg" }));
}

function select(name: string, options: string[], value: string): HTMLSelectElement {
  const s = h("select", { name });
  for (const o of options) s.append(h("option", { value: o, selected: o === value }, o === "" ? "none" : o));
  return s;
}

interface RuleValues {
  entryProtocol: string;
  entryPort: string;
  targetProtocol: string;
  targetPort: string;
}

function ruleRow(i: number, v: RuleValues): HTMLElement {
  return h(
    "div",
    { class: "rule", "data-field": `forwarding[${i}]`, "data-rule": i },
    field(`forwarding[${i}].entryProtocol`, "Entry protocol", select("entryProtocol", protocols, v.entryProtocol)),
    field(`forwarding[${i}].entryPort`, "Entry port", h("input", { name: "entryPort", inputmode: "numeric", value: v.entryPort })),
    field(`forwarding[${i}].targetProtocol`, "Target protocol", select("targetProtocol", protocols, v.targetProtocol)),
    field(`forwarding[${i}].targetPort`, "Target port", h("input", { name: "targetPort", inputmode: "numeric", value: v.targetPort })),
    h("small", { class: "msg" }),
  );
}

function rulesBlock(rules: RuleValues[]): HTMLElement {
  const box = h("div", { class: "rules", "data-field": "forwarding" }, h("small", { class: "msg" }));
  rules.forEach((r, i) => box.insertBefore(ruleRow(i, r), box.lastChild));
  const add = h("button", { type: "button", class: "link", "data-action": "add-rule" }, "+ forwarding rule");
  add.addEventListener("click", () => {
    const n = box.querySelectorAll(".rule").length;
    box.insertBefore(ruleRow(n, { entryProtocol: "http", entryPort: "", targetProtocol: "http", targetPort: "" }), box.lastChild);
  });
  return h("fieldset", {}, h("legend", {}, "Forwarding"), box, add);
}

function readRules(form: HTMLElement): { entryProtocol: string; entryPort: number; targetProtocol: string; targetPort: number }[] {
  return [...form.querySelectorAll<HTMLElement>(".rule")].map((row) => ({
    entryProtocol: (row.querySelector("[name=entryProtocol]") as HTMLSelectElement).value,
    entryPort: toInt((row.querySelector("[name=entryPort]") as HTMLInputElement).value),
    targetProtocol: (row.querySelector("[name=targetProtocol]") as HTMLSelectElement).value,
    targetPort: toInt((row.querySelector("[name=targetPort]") as HTMLInputElement).value),
  }));
}

// toInt reads a number field; what is not a whole number goes as 0, which the server refuses
// for that field (the console leaves every rule to the server, so the marks are the server's).
function toInt(s: string): number {
  const n = Number(s.trim());
  return Number.isInteger(n) && Math.abs(n) < 2 ** 31 ? n : 0;
}

function healthBlock(hc: { protocol: string; port: string; path: string }): HTMLElement {
  return h(
    "fieldset",
    { "data-field": "healthCheck" },
    h("legend", {}, "Health check"),
    field("healthCheck.protocol", "Protocol", select("hcProtocol", ["", "http", "https", "tcp"], hc.protocol)),
    field("healthCheck.port", "Port", h("input", { name: "hcPort", inputmode: "numeric", value: hc.port })),
    field("healthCheck.path", "Path", h("input", { name: "hcPath", value: hc.path })),
    h("small", { class: "msg" }),
  );
}

function readHealth(form: HTMLElement): { protocol: string; port: number; path: string } | undefined {
  const protocol = (form.querySelector("[name=hcProtocol]") as HTMLSelectElement).value;
  if (!protocol) return undefined;
  return {
    protocol,
    port: toInt((form.querySelector("[name=hcPort]") as HTMLInputElement).value),
    path: (form.querySelector("[name=hcPath]") as HTMLInputElement).value,
  };
}

function clearMarks(form: HTMLElement): void {
  for (const el of form.querySelectorAll(".invalid")) el.classList.remove("invalid");
  for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
  for (const el of form.querySelectorAll(".msg")) el.textContent = "";
  const err = form.querySelector(".form-error");
  if (err) {
    err.textContent = "";
    err.classList.remove("ok");
  }
}

// violationPath renders a violation's field path as the server names fields (camelCase JSON
// names, [i] for list items): forwarding[0].entryPort. A message rule without a path names the
// field its id starts with (targets.scope -> targets).
function violationPath(v: Violation): string {
  const parts: string[] = [];
  for (const el of v.field?.elements ?? []) {
    let s = el.fieldName.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    if (el.subscript.case === "index") s += `[${el.subscript.value}]`;
    else if (el.subscript.case === "stringKey") s += `[${JSON.stringify(el.subscript.value)}]`;
    parts.push(s);
  }
  if (parts.length > 0) return parts.join(".");
  const rule = v.ruleId ?? "";
  const dot = rule.indexOf(".");
  return dot > 0 ? rule.slice(0, dot) : rule;
}

// markErrors marks every field the server named: all of buf.validate.Violations when the refusal
// carries them, else the one field of the platform error. Returns the marked paths.
function markErrors(form: HTMLElement, err: unknown): string[] {
  clearMarks(form);
  const pe = toPlatformError(err);
  const general = form.querySelector(".form-error");
  if (!pe) {
    if (general) general.textContent = String(err);
    return [];
  }
  const found: { path: string; message: string }[] = [];
  const cause = pe.cause as { findDetails?: (s: typeof ViolationsSchema) => { violations: Violation[] }[] } | undefined;
  for (const d of cause?.findDetails?.(ViolationsSchema) ?? []) {
    for (const v of d.violations) found.push({ path: violationPath(v), message: v.message });
  }
  if (found.length === 0 && pe.field) found.push({ path: pe.field, message: pe.message });
  const unplaced: string[] = [];
  const marked: string[] = [];
  for (const { path, message } of found) {
    const target = findField(form, path);
    if (!target) {
      unplaced.push(`${path}: ${message}`);
      continue;
    }
    target.classList.add("invalid");
    target.querySelector("[data-input]")?.setAttribute("aria-invalid", "true");
    const msg = target.querySelector(":scope > .msg");
    if (msg) msg.textContent = msg.textContent ? `${msg.textContent}; ${message}` : message;
    marked.push(path);
  }
  if (general) {
    const head = pe.code === "INVALID_INPUT" ? "Fix the marked fields." : `${pe.code}: ${pe.message}`;
    general.textContent = [head, ...unplaced].join(" ");
  }
  return marked;
}

// findField finds the form element for a path, or for the nearest enclosing path
// (forwarding[0].entryPort, then forwarding[0], then forwarding).
function findField(form: HTMLElement, path: string): HTMLElement | null {
  let p = path;
  for (;;) {
    const el = form.querySelector<HTMLElement>(`[data-field="${CSS.escape(p)}"]`);
    if (el) return el;
    const cut = Math.max(p.lastIndexOf("."), p.lastIndexOf("["));
    if (cut <= 0) return null;
    p = p.slice(0, cut);
  }
}

// ---------- provider settings ----------

// The settings' choices as the form offers them: "" leaves the provider's default.
const NETWORKS: Record<string, LoadBalancerNetwork> = {
  "": LoadBalancerNetwork.UNSPECIFIED,
  external: LoadBalancerNetwork.EXTERNAL,
  internal: LoadBalancerNetwork.INTERNAL,
};
const NETWORK_STACKS: Record<string, LoadBalancerNetworkStack> = {
  "": LoadBalancerNetworkStack.UNSPECIFIED,
  ipv4: LoadBalancerNetworkStack.IPV4,
  dualstack: LoadBalancerNetworkStack.DUALSTACK,
};
const CIPHER_POLICIES: Record<string, LoadBalancerTlsCipherPolicy> = {
  "": LoadBalancerTlsCipherPolicy.UNSPECIFIED,
  default: LoadBalancerTlsCipherPolicy.DEFAULT,
  strong: LoadBalancerTlsCipherPolicy.STRONG,
};

function choiceName<T>(choices: Record<string, T>, v: T): string {
  return Object.keys(choices).find((k) => choices[k] === v) ?? "";
}

// choiceSelect is a select of a setting's choices, "" reading as the provider's default.
function choiceSelect(name: string, options: string[], value: string): HTMLSelectElement {
  const s = h("select", { name });
  for (const o of options) s.append(h("option", { value: o, selected: o === value }, o === "" ? "provider default" : o));
  return s;
}

function checkbox(name: string, checked: boolean): HTMLInputElement {
  return h("input", { name, type: "checkbox", checked });
}

interface SettingValues {
  sizeUnit: string;
  idle: string;
  proxy: boolean;
  keepalive: boolean;
  cipher: string;
  noLEDNS: boolean;
}

// settingsBlock is the settings an update may change too; create adds network, networkStack and
// labels, which are fixed once the load balancer is made.
function settingsBlock(v: SettingValues, create: boolean): HTMLElement {
  return h(
    "fieldset",
    { "data-field": "settings" },
    h("legend", {}, "Provider settings (empty: the provider's default)"),
    field("sizeUnit", "Size unit (1-100 nodes)", h("input", { name: "sizeUnit", inputmode: "numeric", value: v.sizeUnit, placeholder: "1" })),
    field(
      "httpIdleTimeoutSeconds",
      "HTTP idle timeout (30-600 s)",
      h("input", { name: "idle", inputmode: "numeric", value: v.idle, placeholder: "60" }),
    ),
    field("enableProxyProtocol", "PROXY protocol", checkbox("proxy", v.proxy)),
    field("enableBackendKeepalive", "Backend keepalive", checkbox("keepalive", v.keepalive)),
    field("tlsCipherPolicy", "TLS cipher policy", choiceSelect("cipher", Object.keys(CIPHER_POLICIES), v.cipher)),
    field("disableLetsEncryptDnsRecords", "No Let's Encrypt DNS records", checkbox("noLEDNS", v.noLEDNS)),
    create && field("network", "Network", choiceSelect("network", Object.keys(NETWORKS), "")),
    create && field("networkStack", "Network stack", choiceSelect("networkStack", Object.keys(NETWORK_STACKS), "")),
    create && field("labels", "Labels (key=value, comma separated)", h("input", { name: "labels", autocomplete: "off" })),
    h("small", { class: "msg" }),
  );
}

// optionalInt reads a number setting: empty is absent (the provider's default).
function optionalInt(form: HTMLElement, name: string): number | undefined {
  const s = (form.querySelector(`[name=${name}]`) as HTMLInputElement).value.trim();
  return s === "" ? undefined : toInt(s);
}

function checked(form: HTMLElement, name: string): boolean {
  return (form.querySelector(`[name=${name}]`) as HTMLInputElement).checked;
}

function chosen(form: HTMLElement, name: string): string {
  return (form.querySelector(`[name=${name}]`) as HTMLSelectElement).value;
}

// readSettings reads the settings an update may change, each present (the update replaces each).
function readSettings(form: HTMLElement) {
  return {
    sizeUnit: optionalInt(form, "sizeUnit"),
    httpIdleTimeoutSeconds: optionalInt(form, "idle"),
    enableProxyProtocol: checked(form, "proxy"),
    enableBackendKeepalive: checked(form, "keepalive"),
    tlsCipherPolicy: CIPHER_POLICIES[chosen(form, "cipher")],
    disableLetsEncryptDnsRecords: checked(form, "noLEDNS"),
  };
}

// readLabels reads "key=value, key=value"; the server judges keys and values.
function readLabels(form: HTMLElement): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (form.querySelector("[name=labels]") as HTMLInputElement).value.split(",")) {
    if (pair.trim() === "") continue;
    const eq = pair.indexOf("=");
    out[(eq < 0 ? pair : pair.slice(0, eq)).trim()] = eq < 0 ? "" : pair.slice(eq + 1).trim();
  }
  return out;
}

function settingRows(lb: LoadBalancer): [string, string][] {
  const labels = Object.entries(lb.labels)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
  return [
    ["size unit", lb.sizeUnit === undefined ? "default" : String(lb.sizeUnit)],
    ["http idle timeout", lb.httpIdleTimeoutSeconds === undefined ? "default" : `${lb.httpIdleTimeoutSeconds} s`],
    ["proxy protocol", lb.enableProxyProtocol ? "yes" : "no"],
    ["backend keepalive", lb.enableBackendKeepalive ? "yes" : "no"],
    ["network", choiceName(NETWORKS, lb.network) || "default"],
    ["network stack", choiceName(NETWORK_STACKS, lb.networkStack) || "default"],
    ["tls cipher policy", choiceName(CIPHER_POLICIES, lb.tlsCipherPolicy) || "default"],
    ["let's encrypt dns records", lb.disableLetsEncryptDnsRecords ? "disabled" : "enabled"],
    ["labels", labels],
  ];
}

// ---------- create ----------

function renderCreateForm(): void {
  const box = $("#create-section");
  if (!box) return;
  const toggle = h("button", { type: "button", id: "create-open" }, "New load balancer");
  const pool = state.pools[0];
  const poolSelect = h("select", { name: "poolId" });
  for (const p of state.pools) poolSelect.append(h("option", { value: p.id }, `${p.name} (${p.id})`));
  const regionSelect = h("select", { name: "region" });
  const fillRegions = () => {
    const p = state.pools.find((x) => x.id === poolSelect.value);
    regionSelect.replaceChildren(...(p?.regions ?? []).map((r) => h("option", { value: r }, r)));
  };
  poolSelect.addEventListener("change", fillRegions);
  const form = h(
    "form",
    { id: "create", novalidate: true, hidden: true },
    h("h3", {}, "New load balancer"),
    field("name", "Name", h("input", { name: "name", placeholder: "web", autocomplete: "off" })),
    field("poolId", "Pool", poolSelect),
    field("region", "Region", regionSelect),
    rulesBlock([{ entryProtocol: "http", entryPort: "80", targetProtocol: "http", targetPort: "8080" }]),
    healthBlock({ protocol: "", port: "", path: "" }),
    field("redirectHttpToHttps", "Redirect http to https", h("input", { name: "redirect", type: "checkbox" })),
    settingsBlock({ sizeUnit: "", idle: "", proxy: false, keepalive: false, cipher: "", noLEDNS: false }, true),
    h("div", { "data-field": "targets" }, h("small", { class: "msg" })),
    h("p", { class: "form-error error", role: "alert" }),
    h("button", { type: "submit", id: "create-submit" }, "Create"),
    h("button", { type: "button", class: "link", onclick: () => (form.hidden = true) }, "Cancel"),
  );
  if (!pool) form.prepend(h("p", { class: "muted" }, "This tenant has no pool yet: a platform admin makes one."));
  fillRegions();
  toggle.addEventListener("click", () => {
    form.hidden = !form.hidden;
    if (!form.hidden) (form.querySelector("[name=name]") as HTMLInputElement).focus();
  });
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void submitCreate(form);
  });
  box.replaceChildren(toggle, form);
}

async function submitCreate(form: HTMLFormElement): Promise<void> {
  const { client, session } = ready();
  const submit = form.querySelector<HTMLButtonElement>("#create-submit")!;
  submit.disabled = true;
  const value = (n: string) => (form.querySelector(`[name=${n}]`) as HTMLInputElement | HTMLSelectElement).value;
  try {
    const hc = readHealth(form);
    const { loadBalancer } = await client.loadBalancers.createLoadBalancer({
      tenantId: session.tenantId,
      name: value("name").trim(),
      poolId: value("poolId"),
      region: value("region"),
      scope: "regional",
      targets: { pool: true },
      forwarding: readRules(form),
      ...(hc ? { healthCheck: hc } : {}),
      redirectHttpToHttps: (form.querySelector("[name=redirect]") as HTMLInputElement).checked,
      ...readSettings(form),
      network: NETWORKS[chosen(form, "network")],
      networkStack: NETWORK_STACKS[chosen(form, "networkStack")],
      labels: readLabels(form),
      idempotencyKey: state.createKey,
    });
    clearMarks(form);
    state.createKey = randomKey();
    if (loadBalancer) state.lbs.set(loadBalancer.id, loadBalancer);
    renderList();
    form.reset();
    form.hidden = true;
  } catch (e) {
    markErrors(form, e);
    // The same request may be sent again once fixed; another request needs another key.
    state.createKey = randomKey();
  } finally {
    submit.disabled = false;
  }
}

// ---------- detail ----------

async function openDetail(id: string): Promise<void> {
  state.selected = id;
  renderList();
  const box = $("#detail");
  if (!box) return;
  box.hidden = false;
  box.replaceChildren(
    h("h2", {}, "Load balancer ", h("code", {}, id)),
    h("dl", { id: "detail-fields" }),
    h("h3", {}, "Reached instances"),
    h("ul", { id: "reached" }),
    h("h3", {}, "Usage"),
    h("div", { id: "usage" }, "…"),
    h("h3", {}, "Events"),
    h("ol", { id: "events" }),
    h("div", { id: "update-section" }),
    h(
      "div",
      { class: "danger" },
      h("button", { type: "button", id: "delete", onclick: () => askDelete() }, "Delete…"),
      h("button", { type: "button", id: "delete-confirm", hidden: true, onclick: () => void doDelete(id) }, "Really delete"),
      h("p", { id: "delete-error", class: "error", role: "alert" }),
    ),
  );
  renderDetailFields(id);
  renderUpdateForm(id);
  await Promise.all([renderEvents(id), renderUsage(id)]);
}

function renderDetailFields(id: string): void {
  const lb = state.lbs.get(id);
  const dl = $("#detail-fields");
  if (!dl) return;
  if (!lb) {
    dl.replaceChildren(h("dt", {}, "state"), h("dd", { "data-key": "state" }, "deleted"));
    $("#reached")?.replaceChildren();
    return;
  }
  const hc = lb.healthCheck;
  const rows: [string, string][] = [
    ["name", lb.name],
    ["state", lb.state],
    ["scope", lb.scope],
    ["region", lb.region],
    ["pool", lb.poolId],
    ["address", lb.address],
    ["forwarding", lb.forwarding.map((r) => `${r.entryProtocol}:${r.entryPort} → ${r.targetProtocol}:${r.targetPort}`).join(", ")],
    ["health check", hc ? `${hc.protocol}:${hc.port}${hc.path}` : ""],
    ["redirect http→https", lb.redirectHttpToHttps ? "yes" : "no"],
    ...settingRows(lb),
    ["last error", lb.lastError],
    ["created", fmtTime(lb.createTime)],
    ["ready", fmtTime(lb.readyTime)],
    // Set when the reconciler put back a change someone made at the provider (docs/drift.md).
    ["last drift", fmtTime(lb.lastDriftTime)],
  ];
  dl.replaceChildren(...rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", { "data-key": k }, v || "—")]));
  const reached = $("#reached");
  reached?.replaceChildren(
    ...(lb.reachedInstanceIds.length > 0
      ? lb.reachedInstanceIds.map((i) => h("li", {}, h("code", {}, i)))
      : [h("li", { class: "muted", "data-empty": true }, "no instance reached yet")]),
  );
}

async function renderEvents(id: string): Promise<void> {
  const { client, session } = ready();
  const list = $("#events");
  if (!list) return;
  try {
    const { events } = await client.events.listEvents({ tenantId: session.tenantId, resourceId: id, limit: 1000 });
    if (state.selected !== id) return;
    list.replaceChildren(...events.map(eventItem));
  } catch (e) {
    list.replaceChildren(h("li", { class: "error" }, toPlatformError(e)?.message ?? String(e)));
  }
}

function eventItem(e: Event): HTMLElement {
  return h("li", { "data-cursor": String(e.cursor), "data-type": e.type }, h("code", {}, e.type), " ", h("span", { class: "muted" }, fmtTime(e.createTime)));
}

function appendDetailEvent(e: Event): void {
  const list = $("#events");
  if (!list || list.querySelector(`[data-cursor="${e.cursor}"]`)) return;
  list.append(eventItem(e));
}

async function renderUsage(id: string): Promise<void> {
  const { client, session } = ready();
  const box = $("#usage");
  if (!box) return;
  try {
    const { records } = await client.usage.listUsage({ tenantId: session.tenantId });
    if (state.selected !== id) return;
    const mine = records.filter((r) => r.resourceId === id);
    const byMeter = new Map<string, number>();
    for (const r of mine) byMeter.set(r.meter, (byMeter.get(r.meter) ?? 0) + r.quantity);
    box.replaceChildren(
      byMeter.size === 0
        ? h("p", { class: "muted", "data-empty": true }, "no usage recorded yet")
        : h("ul", {}, ...[...byMeter].map(([m, q]) => h("li", { "data-meter": m }, h("code", {}, m), ` ${q.toFixed(4)}`))),
    );
  } catch (e) {
    box.replaceChildren(h("p", { class: "error" }, toPlatformError(e)?.message ?? String(e)));
  }
}

function renderUpdateForm(id: string): void {
  const lb = state.lbs.get(id);
  const box = $("#update-section");
  if (!box || !lb) return;
  const hc = lb.healthCheck;
  const form = h(
    "form",
    { id: "update", novalidate: true },
    h("h3", {}, "Update"),
    rulesBlock(
      lb.forwarding.map((r) => ({
        entryProtocol: r.entryProtocol,
        entryPort: String(r.entryPort),
        targetProtocol: r.targetProtocol,
        targetPort: String(r.targetPort),
      })),
    ),
    healthBlock({ protocol: hc?.protocol ?? "", port: hc ? String(hc.port) : "", path: hc?.path ?? "" }),
    field("redirectHttpToHttps", "Redirect http to https", h("input", { name: "redirect", type: "checkbox", checked: lb.redirectHttpToHttps })),
    settingsBlock(
      {
        sizeUnit: lb.sizeUnit === undefined ? "" : String(lb.sizeUnit),
        idle: lb.httpIdleTimeoutSeconds === undefined ? "" : String(lb.httpIdleTimeoutSeconds),
        proxy: lb.enableProxyProtocol,
        keepalive: lb.enableBackendKeepalive,
        cipher: choiceName(CIPHER_POLICIES, lb.tlsCipherPolicy),
        noLEDNS: lb.disableLetsEncryptDnsRecords,
      },
      false,
    ),
    h("p", { class: "form-error error", role: "alert" }),
    h("button", { type: "submit", id: "update-submit" }, "Save"),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void submitUpdate(form, id);
  });
  box.replaceChildren(form);
}

async function submitUpdate(form: HTMLFormElement, id: string): Promise<void> {
  const { client, session } = ready();
  const submit = form.querySelector<HTMLButtonElement>("#update-submit")!;
  submit.disabled = true;
  try {
    // Every part shown is sent, so each replaces the old; a health check set to none is removed.
    const req = maskedUpdate({
      tenantId: session.tenantId,
      loadBalancerId: id,
      forwarding: readRules(form),
      healthCheck: readHealth(form),
      redirectHttpToHttps: (form.querySelector("[name=redirect]") as HTMLInputElement).checked,
      ...readSettings(form),
    });
    const { loadBalancer } = await client.loadBalancers.updateLoadBalancer(req);
    clearMarks(form);
    const msg = form.querySelector(".form-error");
    if (msg) {
      msg.textContent = "Saved.";
      msg.classList.add("ok");
    }
    if (loadBalancer) state.lbs.set(id, loadBalancer);
    renderList();
    renderDetailFields(id);
  } catch (e) {
    markErrors(form, e);
  } finally {
    submit.disabled = false;
  }
}

function askDelete(): void {
  const confirm = $("#delete-confirm");
  if (confirm) confirm.hidden = false;
}

async function doDelete(id: string): Promise<void> {
  const { client, session } = ready();
  const err = $("#delete-error");
  try {
    const { loadBalancer } = await client.loadBalancers.deleteLoadBalancer({ tenantId: session.tenantId, loadBalancerId: id });
    if (loadBalancer) state.lbs.set(id, loadBalancer);
    const confirm = $("#delete-confirm");
    if (confirm) confirm.hidden = true;
    renderList();
    renderDetailFields(id);
  } catch (e) {
    const pe = toPlatformError(e);
    if (err) err.textContent = pe ? `${pe.code}: ${pe.message}` : String(e);
  }
}

// ---------- start ----------

function restore(): void {
  const raw = sessionStorage.getItem(sessionKey);
  if (!raw) return renderSignIn();
  try {
    const s = JSON.parse(raw) as Session;
    const err = h("p");
    renderSignIn();
    void signIn(s, $("#signin-error") ?? err);
  } catch {
    renderSignIn();
  }
}

restore();
