import type { APIPromise, RequestOptions } from "../core.js";
import type { PagePromise } from "../pagination.js";
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
  /** Filter by `status`, `priority` or `assignee_email`. Needs `projects.read`. */
  list(projectId: string, params?: TaskListParams, options?: RequestOptions): PagePromise<Task> {
    return this._client._list("GET /projects/{project_id}/tasks", [projectId], params, options);
  }

  create(projectId: string, params: TaskCreateParams, options?: RequestOptions): APIPromise<Task> {
    return this._client._route("POST /projects/{project_id}/tasks", [projectId], params, options);
  }
}

export class Projects extends APIResource {
  readonly tasks: ProjectTasks = new ProjectTasks(this._client);

  /** Filter by `status`, `client_id` or `search`. Needs `projects.read`. */
  list(params?: ProjectListParams, options?: RequestOptions): PagePromise<Project> {
    return this._client._list("GET /projects", [], params, options);
  }

  create(params: ProjectCreateParams, options?: RequestOptions): APIPromise<Project> {
    return this._client._route("POST /projects", [], params, options);
  }

  retrieve(id: string, options?: RequestOptions): APIPromise<Project> {
    return this._client._route("GET /projects/{id}", [id], undefined, options);
  }

  update(id: string, params: ProjectUpdateParams, options?: RequestOptions): APIPromise<Project> {
    return this._client._route("PATCH /projects/{id}", [id], params, options);
  }

  /** Deletes the project and its tasks. */
  del(id: string, options?: RequestOptions): APIPromise<Deleted> {
    return this._client._route("DELETE /projects/{id}", [id], undefined, options);
  }
}

/** One task by id (`/v1/tasks/{id}`); a project's tasks are `projects.tasks`. */
export class Tasks extends APIResource {
  retrieve(id: string, options?: RequestOptions): APIPromise<Task> {
    return this._client._route("GET /tasks/{id}", [id], undefined, options);
  }

  /** A task moved to `done` gets `completed_at`. */
  update(id: string, params: TaskUpdateParams, options?: RequestOptions): APIPromise<Task> {
    return this._client._route("PATCH /tasks/{id}", [id], params, options);
  }

  del(id: string, options?: RequestOptions): APIPromise<Deleted> {
    return this._client._route("DELETE /tasks/{id}", [id], undefined, options);
  }
}
