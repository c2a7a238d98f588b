import { readFileSync } from "node:fs";
import { PLANS, type PlanName } from "../../schema/lib/plans.ts";
import { ConfigError } from "../runtime/config.ts";
import { projectPath } from "../runtime/project.ts";

export interface CatalogModel {
  id: string;
  object: "model";
  created: number;
  owned_by: string;
}

interface CatalogEntry extends CatalogModel {
  plans: PlanName[];
}

const BUILT_IN = projectPath("server/ai/models.json");

/** Which models each plan may use: data (server/ai/models.json, or AI_MODELS_FILE), read once at start. */
export class ModelCatalog {
  private constructor(private readonly entries: CatalogEntry[]) {}

  static load(file?: string): ModelCatalog {
    const where = file ?? BUILT_IN;
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(where, "utf8"));
    } catch (error) {
      throw new ConfigError(
        `AI_MODELS_FILE ${String(where)} could not be read as JSON: ${(error as Error).message}`,
      );
    }
    const models = (parsed as { models?: unknown }).models;
    if (!Array.isArray(models))
      throw new ConfigError(`The model catalog ${String(where)} needs a "models" array.`);
    const seen = new Set<string>();
    const entries = models.map((model: Record<string, unknown>, index): CatalogEntry => {
      const { id, owned_by, created, plans } = model ?? {};
      const valid =
        typeof id === "string" &&
        id.length > 0 &&
        id.length <= 200 &&
        typeof owned_by === "string" &&
        Number.isSafeInteger(created) &&
        Array.isArray(plans) &&
        plans.every((plan) => (PLANS as readonly unknown[]).includes(plan));
      if (!valid || seen.has(id as string)) {
        throw new ConfigError(
          `The model catalog's entry ${index} needs a unique id, owned_by, created (Unix seconds) and plans among ${PLANS.join(", ")}.`,
        );
      }
      seen.add(id as string);
      return {
        id: id as string,
        object: "model",
        created: created as number,
        owned_by: owned_by as string,
        plans: plans as PlanName[],
      };
    });
    return new ModelCatalog(entries);
  }

  /** The plan's models, in catalog order, in OpenAI's shape. */
  forPlan(plan: PlanName): CatalogModel[] {
    return this.entries
      .filter((entry) => entry.plans.includes(plan))
      .map(({ plans: _plans, ...model }) => model);
  }

  allows(plan: PlanName, id: string): boolean {
    return this.entries.some((entry) => entry.id === id && entry.plans.includes(plan));
  }
}
