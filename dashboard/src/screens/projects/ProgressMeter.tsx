import { useId } from "react";
import type { Progress } from "./progress.ts";

/** "3 of 7 tasks done (43 %)" with a bar; "Counting…" until the first count. */
export function ProgressMeter({ progress }: { progress: Progress | null }) {
  const id = useId();
  if (!progress)
    return (
      <p className="muted projects-progress" role="status">
        Counting tasks…
      </p>
    );
  const { done, total } = progress;
  const percent = total === 0 ? 0 : Math.round((done / total) * 100);
  const text =
    total === 0 ? "No tasks yet." : `${done} of ${total} task${total === 1 ? "" : "s"} done (${percent} %)`;
  return (
    <div className="projects-progress">
      <span id={id} className="projects-progress-label" data-testid="project-progress">
        Progress: {text}
      </span>
      <progress className="meter" max={Math.max(total, 1)} value={done} aria-labelledby={id} />
    </div>
  );
}
