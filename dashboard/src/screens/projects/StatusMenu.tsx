import { type KeyboardEvent, useCallback, useEffect, useId, useRef, useState } from "react";
import type { TaskStatus } from "../../generated/graphql.ts";
import { Button } from "../../ui/Button.tsx";
import { TASK_STATUS_TEXT, TASK_STATUSES } from "./project-cells.tsx";

/**
 * A task's status as a menu button (the WAI-ARIA menu button pattern): Enter, Space or ↓ opens
 * the menu on the current status, ↑/↓/Home/End move, Enter or Space chooses, Escape and Tab close
 * it and focus returns to the button. The menu is a popover, in the top layer, so a table that
 * scrolls sideways does not clip it.
 */
export function StatusMenu({
  status,
  subject,
  disabled,
  busy,
  onChoose,
}: {
  status: TaskStatus;
  /** What the status is of, for the button's name: "Status of Write the spec: To do". */
  subject: string;
  disabled?: boolean;
  busy?: boolean;
  onChoose(status: TaskStatus): void;
}) {
  const id = useId();
  const buttonId = `${id}-button`;
  const menu = useRef<HTMLDivElement>(null);
  const [expanded, setExpanded] = useState(false);
  const button = () => document.getElementById(buttonId);
  const items = () => [...(menu.current?.querySelectorAll<HTMLElement>('[role="menuitemradio"]') ?? [])];

  /** Under the button, inside the viewport (a phone is narrow; the last row is near the bottom). */
  const place = useCallback(() => {
    const at = document.getElementById(buttonId)?.getBoundingClientRect();
    const popover = menu.current;
    if (!at || !popover) return;
    const width = popover.offsetWidth;
    const height = popover.offsetHeight;
    const left = Math.max(8, Math.min(at.left, window.innerWidth - width - 8));
    const below = at.bottom + 4 + height <= window.innerHeight;
    popover.style.left = `${left}px`;
    popover.style.top = `${below ? at.bottom + 4 : Math.max(8, at.top - height - 4)}px`;
  }, [buttonId]);
  // While open it follows its button when the page scrolls or the window is resized.
  useEffect(() => {
    if (!expanded) return;
    window.addEventListener("scroll", place, { capture: true, passive: true });
    window.addEventListener("resize", place);
    return () => {
      window.removeEventListener("scroll", place, { capture: true });
      window.removeEventListener("resize", place);
    };
  }, [expanded, place]);

  // A click on the button of an open menu closes it: the press has already light-dismissed it.
  const openAtPress = useRef(false);
  const open = () => {
    if (!menu.current || disabled || busy) return;
    if (!menu.current.matches(":popover-open")) menu.current.showPopover();
    // The toggle event comes a task later: the button says it is expanded at once.
    setExpanded(true);
    place();
    (items().find((item) => item.getAttribute("aria-checked") === "true") ?? items()[0])?.focus();
  };
  const close = () => {
    menu.current?.hidePopover();
    button()?.focus();
  };
  const choose = (next: TaskStatus) => {
    close();
    if (next !== status) onChoose(next);
  };
  const move = (event: KeyboardEvent<HTMLDivElement>) => {
    const list = items();
    const at = list.indexOf(document.activeElement as HTMLElement);
    const to = {
      ArrowDown: (at + 1) % list.length,
      ArrowUp: (at - 1 + list.length) % list.length,
      Home: 0,
      End: list.length - 1,
    }[event.key];
    if (to !== undefined) {
      event.preventDefault();
      list[to]?.focus();
    } else if (event.key === "Escape") {
      event.preventDefault();
      close();
    } else if (event.key === "Tab") {
      // Tab leaves the menu: it closes, and focus goes on from the button.
      menu.current?.hidePopover();
      button()?.focus();
    }
  };

  return (
    <>
      <Button
        id={buttonId}
        className="projects-status-button"
        aria-haspopup="menu"
        aria-controls={id}
        aria-expanded={expanded}
        aria-label={`Status of ${subject}: ${TASK_STATUS_TEXT[status]}`}
        disabled={disabled}
        busy={busy}
        data-status={status}
        onPointerDown={() => {
          openAtPress.current = menu.current?.matches(":popover-open") ?? false;
        }}
        onClick={() => {
          if (openAtPress.current) openAtPress.current = false;
          else open();
        }}
        onKeyDown={(event) => {
          if (event.key === "ArrowDown" || event.key === "ArrowUp") {
            event.preventDefault();
            open();
          }
        }}
      >
        {TASK_STATUS_TEXT[status]}
        <span aria-hidden="true">▾</span>
      </Button>
      <div
        ref={menu}
        id={id}
        popover="auto"
        role="menu"
        aria-label={`Status of ${subject}`}
        className="projects-status-menu"
        onKeyDown={move}
        onToggle={(event) => setExpanded((event.nativeEvent as ToggleEvent).newState === "open")}
      >
        {TASK_STATUSES.map((option) => (
          <button
            key={option}
            type="button"
            role="menuitemradio"
            aria-checked={option === status}
            tabIndex={-1}
            onClick={() => choose(option)}
          >
            {TASK_STATUS_TEXT[option]}
          </button>
        ))}
      </div>
    </>
  );
}
