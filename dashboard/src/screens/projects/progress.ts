import { useEffect, useState } from "react";
import { usePaged } from "../../api/paged.ts";
import { TaskStatusesDocument } from "../../generated/graphql.ts";

export interface Progress {
  done: number;
  total: number;
}

/**
 * How many of a project's tasks are done, of all of them. The API gives no counts: the statuses
 * are read 100 at a time until the last page (a project of a few hundred tasks is a few small
 * requests). The last complete count stays shown while a new one is made (`recount()` after a
 * change); null until the first is.
 */
export function useTaskProgress(projectId: string): {
  progress: Progress | null;
  error: unknown;
  recount(): void;
} {
  const tasks = usePaged(TaskStatusesDocument, { project_id: projectId }, (data) => data.tasks);
  const [progress, setProgress] = useState<{ of: string; counts: Progress } | null>(null);
  const { hasMore, loading, error, more, rows } = tasks;
  const complete = !hasMore && !loading && error === undefined;
  const done = rows.filter((task) => task.status === "done").length;
  useEffect(() => {
    if (hasMore && !loading && error === undefined) more();
  });
  useEffect(() => {
    if (complete) setProgress({ of: projectId, counts: { done, total: rows.length } });
  }, [complete, done, rows.length, projectId]);
  return {
    progress: progress?.of === projectId ? progress.counts : null,
    error,
    recount: tasks.restart,
  };
}
