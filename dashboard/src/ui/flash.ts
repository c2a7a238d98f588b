/**
 * A confirmation that outlives a change of screen ("Item deleted." shown by the list the detail
 * screen went back to): set before navigating, taken by the next screen's first render.
 */
let pending = "";

export function setFlash(text: string): void {
  pending = text;
}

/**
 * The confirmation left for this screen; "" when none. Cleared after the current task, so a
 * render React runs twice (strict mode) reads it both times.
 *
 * @example const [notice, setNotice] = useState(takeFlash);
 */
export function takeFlash(): string {
  const text = pending;
  if (text) setTimeout(() => (pending = pending === text ? "" : pending), 0);
  return text;
}
