import type { APIPromise, RequestOptions } from "../lib/core.js";
import type { PagePromise } from "../lib/pagination.js";
import type {
  Deleted,
  Project,
  ProjectCreateParams,
  ProjectListParams,
  ProjectUpdateParams,
  Task,
  TaskCreateParams,
  TaskListParams,
  TaskUpdateParams,
} from "../types.js";
import { APIResource } from "./resource.js";

/** The tasks of one project: `/v1/projects/{project_id}/tasks`. */
export class ProjectTasks extends APIResource {
  /**
   * Filter by `status`, `priority` or `assignee_email`. Needs `projects.read`.
   *
   * @example
   * ```ts
   * for await (const task of kontor.projects.tasks.list("prj_…", { status: "todo" })) console.log(task.title);
   * ```
   */
  list(projectId: string, params?: TaskListParams, options?: RequestOptions): PagePromise<Task> {
    return this._client._list("GET /projects/{project_id}/tasks", [projectId], params, options);
  }

  /**
   * Adds a task to the project. Needs `projects.write`.
   *
   * @example
   * ```ts
   * const task = await kontor.projects.tasks.create("prj_…", { title: "Draft the offer", priority: "high" });
   * ```
   */
  create(projectId: string, params: TaskCreateParams, options?: RequestOptions): APIPromise<Task> {
    return this._client._route("POST /projects/{project_id}/tasks", [projectId], params, options);
  }
}

export class Projects extends APIResource {
  readonly tasks: ProjectTasks = new ProjectTasks(this._client);

  /**
   * Filter by `status`, `client_id` or `search`. Needs `projects.read`.
   *
   * @example
   * ```ts
   * for await (const project of kontor.projects.list({ status: "active" })) console.log(project.name);
   * ```
   */
  list(params?: ProjectListParams, options?: RequestOptions): PagePromise<Project> {
    return this._client._list("GET /projects", [], params, options);
  }

  /**
   * Creates a project. Needs `projects.write`.
   *
   * @example
   * ```ts
   * const project = await kontor.projects.create({ name: "Website relaunch", client_id: "cli_…", budget: 12000 });
   * ```
   */
  create(params: ProjectCreateParams, options?: RequestOptions): APIPromise<Project> {
    return this._client._route("POST /projects", [], params, options);
  }

  /**
   * One project by id. Needs `projects.read`.
   *
   * @example
   * ```ts
   * const project = await kontor.projects.retrieve("prj_…");
   * ```
   */
  retrieve(id: string, options?: RequestOptions): APIPromise<Project> {
    return this._client._route("GET /projects/{id}", [id], undefined, options);
  }

  /**
   * Changes the fields sent; `null` clears an optional one. Needs `projects.write`.
   *
   * @example
   * ```ts
   * await kontor.projects.update("prj_…", { status: "completed" });
   * ```
   */
  update(id: string, params: ProjectUpdateParams, options?: RequestOptions): APIPromise<Project> {
    return this._client._route("PATCH /projects/{id}", [id], params, options);
  }

  /**
   * Deletes the project and its tasks.
   *
   * @example
   * ```ts
   * await kontor.projects.del("prj_…");
   * ```
   */
  del(id: string, options?: RequestOptions): APIPromise<Deleted> {
    return this._client._route("DELETE /projects/{id}", [id], undefined, options);
  }
}

/** One task by id (`/v1/tasks/{id}`); a project's tasks are `projects.tasks`. */
export class Tasks extends APIResource {
  /**
   * One task by id. Needs `projects.read`.
   *
   * @example
   * ```ts
   * const task = await kontor.tasks.retrieve("tsk_…");
   * ```
   */
  retrieve(id: string, options?: RequestOptions): APIPromise<Task> {
    return this._client._route("GET /tasks/{id}", [id], undefined, options);
  }

  /**
   * A task moved to `done` gets `completed_at`.
   *
   * @example
   * ```ts
   * const task = await kontor.tasks.update("tsk_…", { status: "done" });
   * console.log(task.completed_at);
   * ```
   */
  update(id: string, params: TaskUpdateParams, options?: RequestOptions): APIPromise<Task> {
    return this._client._route("PATCH /tasks/{id}", [id], params, options);
  }

  /**
   * Deletes the task. Needs `projects.write`.
   *
   * @example
   * ```ts
   * await kontor.tasks.del("tsk_…");
   * ```
   */
  del(id: string, options?: RequestOptions): APIPromise<Deleted> {
    return this._client._route("DELETE /tasks/{id}", [id], undefined, options);
  }
}
