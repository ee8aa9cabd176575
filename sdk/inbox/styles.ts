/**
 * The element's stylesheet. Every colour, size and the font come from CSS custom properties
 * set on `postbox-inbox` (or any ancestor), with defaults that pass WCAG AA contrast; parts
 * (`::part(bell)`, `badge`, `panel`, `item`, `tab`) allow more (docs/inbox-element.md).
 */
export const STYLES = `
:host {
  --_accent: var(--postbox-accent, #1f4fd1);
  --_accent-fg: var(--postbox-accent-contrast, #ffffff);
  --_bg: var(--postbox-bg, #ffffff);
  --_fg: var(--postbox-fg, #1b1f24);
  --_muted: var(--postbox-muted, #545d68);
  --_border: var(--postbox-border, #d4d9df);
  --_unread-bg: var(--postbox-unread-bg, #eef3fe);
  --_hover-bg: var(--postbox-hover-bg, #f3f5f7);
  --_badge-bg: var(--postbox-badge-bg, #c4281c);
  --_badge-fg: var(--postbox-badge-fg, #ffffff);
  --_radius: var(--postbox-radius, 10px);
  --_width: var(--postbox-panel-width, 380px);
  --_height: var(--postbox-panel-max-height, 480px);
  --_shadow: var(--postbox-shadow, 0 8px 28px rgba(15, 23, 42, 0.18));
  display: inline-block;
  position: relative;
  font: var(--postbox-font, 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif);
  color: var(--_fg);
}
:host([hidden]) { display: none; }
* { box-sizing: border-box; }
button { font: inherit; color: inherit; }
:focus-visible { outline: 2px solid var(--_accent); outline-offset: 2px; }
.sr { position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
.bell {
  position: relative; display: inline-flex; align-items: center; justify-content: center;
  width: 40px; height: 40px; padding: 0; border: 1px solid transparent; border-radius: 50%;
  background: transparent; cursor: pointer;
}
.bell:hover { background: var(--_hover-bg); }
.bell svg { width: 22px; height: 22px; }
.badge {
  position: absolute; top: 2px; right: 0; min-width: 18px; height: 18px; padding: 0 5px;
  border-radius: 9px; background: var(--_badge-bg); color: var(--_badge-fg);
  font-size: 11px; font-weight: 700; line-height: 18px; text-align: center;
}
.badge[hidden] { display: none; }
.panel {
  position: absolute; z-index: var(--postbox-z-index, 1000); top: calc(100% + 6px); right: 0;
  width: min(var(--_width), calc(100vw - 16px)); max-height: var(--_height);
  display: flex; flex-direction: column; overflow: hidden;
  background: var(--_bg); color: var(--_fg); border: 1px solid var(--_border);
  border-radius: var(--_radius); box-shadow: var(--_shadow);
}
:host([inline]) .panel { position: static; box-shadow: none; margin-top: 6px; }
.panel[hidden] { display: none; }
header { display: flex; align-items: center; justify-content: space-between; gap: 8px; padding: 10px 12px 6px; }
h2 { margin: 0; font-size: 15px; font-weight: 650; }
.link {
  border: 0; background: none; padding: 4px 6px; border-radius: 6px; color: var(--_accent);
  cursor: pointer; font-weight: 550;
}
.link:hover { background: var(--_hover-bg); }
.link:disabled { color: var(--_muted); cursor: default; background: none; }
[role="tablist"] { display: flex; gap: 2px; padding: 0 8px; border-bottom: 1px solid var(--_border); overflow-x: auto; }
[role="tab"] {
  border: 0; border-bottom: 2px solid transparent; background: none; padding: 8px 10px;
  color: var(--_muted); cursor: pointer; white-space: nowrap;
}
[role="tab"][aria-selected="true"] { color: var(--_fg); border-bottom-color: var(--_accent); font-weight: 600; }
.count {
  display: inline-block; margin-left: 4px; min-width: 18px; padding: 0 5px; border-radius: 9px;
  background: var(--_hover-bg); color: var(--_fg); font-size: 11px; line-height: 18px; text-align: center;
}
.list { flex: 1; overflow-y: auto; margin: 0; padding: 0; list-style: none; }
.item { position: relative; display: flex; align-items: stretch; border-bottom: 1px solid var(--_border); }
.item.unread { background: var(--_unread-bg); }
.open {
  flex: 1; min-width: 0; display: flex; gap: 10px; padding: 10px 4px 10px 12px; border: 0;
  background: none; text-align: left; cursor: pointer;
}
.open:hover { background: var(--_hover-bg); }
.dot { flex: none; width: 8px; height: 8px; margin-top: 6px; border-radius: 50%; background: transparent; }
.unread .dot { background: var(--_accent); }
.text { min-width: 0; display: flex; flex-direction: column; gap: 2px; }
.title { font-weight: 600; overflow-wrap: anywhere; }
.body { color: var(--_fg); overflow-wrap: anywhere; display: -webkit-box; -webkit-line-clamp: 3; -webkit-box-orient: vertical; overflow: hidden; }
.time { color: var(--_muted); font-size: 12px; }
.sev-warning .title::before { content: "⚠ "; }
.sev-critical .title::before { content: "⛔ "; }
.actions { flex: none; display: flex; align-items: flex-start; gap: 0; padding: 6px 6px 0 0; }
.act {
  display: inline-flex; align-items: center; justify-content: center; width: 28px; height: 28px;
  border: 0; border-radius: 6px; background: none; color: var(--_muted); cursor: pointer;
}
.act:hover { background: var(--_hover-bg); color: var(--_fg); }
.act svg { width: 16px; height: 16px; }
.menu {
  position: absolute; z-index: 2; right: 40px; top: 8px; display: flex; flex-direction: column;
  padding: 4px; background: var(--_bg); border: 1px solid var(--_border); border-radius: 8px; box-shadow: var(--_shadow);
}
.menu[hidden] { display: none; }
.menu button { border: 0; background: none; padding: 6px 10px; text-align: left; border-radius: 6px; cursor: pointer; }
.menu button:hover, .menu button:focus-visible { background: var(--_hover-bg); }
.empty, .status { margin: 0; padding: 18px 12px; color: var(--_muted); text-align: center; }
.status { padding: 6px 12px; font-size: 12px; border-top: 1px solid var(--_border); }
.status:empty { display: none; }
.more { display: block; width: 100%; padding: 8px; border: 0; border-top: 1px solid var(--_border); background: none; color: var(--_accent); cursor: pointer; }
.more[hidden] { display: none; }
@media (prefers-reduced-motion: no-preference) { .badge { transition: transform 0.15s; } }
`
