import { APIPromise, type WithResponse } from "./core.js";

/** A list envelope as the API sends it. */
export interface ListEnvelope<Item> {
  object: string;
  data: Item[];
  has_more: boolean;
  next_cursor: string | null;
}

/**
 * One page of a list (`{object: "list", data, has_more, next_cursor}`, newest first). Iterating a
 * page with `for await` walks it and every page after it.
 */
export class Page<Item> implements AsyncIterable<Item> {
  readonly object: "list" = "list";
  readonly data: Item[];
  readonly has_more: boolean;
  readonly next_cursor: string | null;
  readonly #fetch: (cursor: string) => PagePromise<Item>;

  constructor(envelope: ListEnvelope<Item>, fetchPage: (cursor: string) => PagePromise<Item>) {
    this.data = envelope.data;
    this.has_more = envelope.has_more;
    this.next_cursor = envelope.next_cursor;
    this.#fetch = fetchPage;
  }

  /**
   * Whether another page follows.
   *
   * @example
   * ```ts
   * let page = await kontor.leads.list({ limit: 100 });
   * while (page.hasNextPage()) page = (await page.nextPage())!;
   * ```
   */
  hasNextPage(): boolean {
    return this.has_more && this.next_cursor !== null;
  }

  /**
   * The next page (same filters, `cursor` = this page's `next_cursor`), or null after the last one.
   *
   * @example
   * ```ts
   * const first = await kontor.leads.list();
   * const second = await first.nextPage(); // null after the last page
   * ```
   */
  nextPage(): Promise<Page<Item> | null> {
    return this.hasNextPage() ? this.#fetch(this.next_cursor as string) : Promise.resolve(null);
  }

  /**
   * This page and every page after it.
   *
   * @example
   * ```ts
   * for await (const page of (await kontor.leads.list({ limit: 100 })).iterPages()) await store(page.data);
   * ```
   */
  async *iterPages(): AsyncGenerator<Page<Item>, void, undefined> {
    let page: Page<Item> | null = this;
    while (page) {
      yield page;
      page = await page.nextPage();
    }
  }

  /**
   * Every item of this page and of the pages after it.
   *
   * @example
   * ```ts
   * const page = await kontor.leads.list();
   * for await (const lead of page) console.log(lead.id); // this page, then the next ones
   * ```
   */
  async *[Symbol.asyncIterator](): AsyncGenerator<Item, void, undefined> {
    for await (const page of this.iterPages()) yield* page.data;
  }

  /**
   * The page as the API sent it (its list envelope), for `JSON.stringify`.
   *
   * @example
   * ```ts
   * JSON.stringify(await kontor.leads.list()); // {"object":"list","data":[…],"has_more":…,"next_cursor":…}
   * ```
   */
  toJSON(): ListEnvelope<Item> {
    return { object: this.object, data: this.data, has_more: this.has_more, next_cursor: this.next_cursor };
  }
}

/**
 * What a `list` method returns: await it for the first page, or iterate it with `for await` for
 * every item of every page.
 */
export class PagePromise<Item> extends APIPromise<Page<Item>> implements AsyncIterable<Item> {
  constructor(result: Promise<WithResponse<Page<Item>>>) {
    super(result);
  }

  /**
   * Every item of every page, fetching the next page when this one runs out: `for await` straight on the call.
   *
   * @example
   * ```ts
   * for await (const lead of kontor.leads.list({ stage: "won" })) console.log(lead.id); // every page
   * ```
   */
  async *[Symbol.asyncIterator](): AsyncGenerator<Item, void, undefined> {
    const page = await this;
    yield* page;
  }
}
