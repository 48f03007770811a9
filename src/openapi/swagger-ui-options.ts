import type { SwaggerCustomOptions } from '@nestjs/swagger';

/**
 * Options for Swagger UI at /docs (`swaggerOptions` of SwaggerModule.setup).
 *
 * Why the plugin: plant ids are int64 and the API writes them exactly, but Swagger UI shows a
 * JSON response body as `JSON.stringify(JSON.parse(text), null, '  ')`, which rounds every
 * integer beyond 2^53 to the nearest double: GET /plants/9007199254740993 would show
 * `"id": 9007199254740992` (swagger-api/swagger-ui#2030, swagger-api/swagger-ui#10049). A
 * `responseInterceptor` cannot help, because that parse happens when the body is displayed, so
 * the plugin wraps the `responseBody` component instead. Requests are untouched: the request
 * body editor already sends its text as typed, and path parameters go into the URL as typed.
 *
 * @nestjs/swagger writes these functions into swagger-ui-init.js with `fn.toString()`, so each
 * runs in the browser and must not refer to anything outside itself (no imports, no helpers).
 */
export const swaggerUiOptions: NonNullable<SwaggerCustomOptions['swaggerOptions']> = {
  persistAuthorization: true,
  // `plugins` replaces @nestjs/swagger's default list, so its DownloadUrl plugin comes first.
  plugins: [keepDownloadUrlPlugin, exactJsonNumbersPlugin],
};

/** Swagger UI's global in the page (swagger-ui-bundle.js); only used in the browser. */
declare const SwaggerUIBundle: { plugins: { DownloadUrl: (system: unknown) => unknown } };

function keepDownloadUrlPlugin(system: unknown): unknown {
  return SwaggerUIBundle.plugins.DownloadUrl(system);
}

interface ResponseBodyProps {
  content?: unknown;
  contentType?: string;
  getComponent: (name: string, container?: boolean) => unknown;
}
interface PluginSystem {
  React: { createElement: (type: unknown, props: unknown, ...children: unknown[]) => unknown };
}
/** JSON.rawJSON and the reviver's `context.source` (ES2026; Chromium 114+, Firefox 135+). */
type JsonWithRawJson = JSON & { rawJSON?: (text: string) => unknown };

/**
 * Shows a JSON response body pretty-printed as Swagger UI does, but with every number exactly
 * as the server wrote it. Only when Swagger UI's own round trip would change a number's text
 * (an integer beyond 2^53, more digits than a double holds, another spelling such as `1.0`) does
 * it render the body itself; otherwise, and in browsers without `JSON.rawJSON`, Swagger UI's
 * component renders as before.
 */
function exactJsonNumbersPlugin(): unknown {
  return {
    wrapComponents: {
      responseBody: (Original: unknown, system: PluginSystem) => (props: ResponseBodyProps) => {
        const { createElement } = system.React;
        const json = JSON as JsonWithRawJson;
        const { content, contentType = '' } = props;
        const rawJSON = json.rawJSON;
        if (typeof content !== 'string' || !/json/i.test(contentType) || !rawJSON) {
          return createElement(Original, props);
        }
        let changed = false;
        let exact: string;
        try {
          const value: unknown = JSON.parse(
            content,
            (_key: string, parsed: unknown, context?: { source?: string }) => {
              const source = context?.source;
              if (typeof parsed !== 'number' || source === undefined) return parsed;
              if (JSON.stringify(parsed) === source) return parsed;
              changed = true;
              return rawJSON(source);
            },
          );
          exact = JSON.stringify(value, null, '  ');
        } catch {
          return createElement(Original, props); // it says "can't parse JSON" itself
        }
        if (!changed) return createElement(Original, props);
        // The same markup as Swagger UI's ResponseBody for JSON: highlighted, copy, download.
        const highlightCode = props.getComponent('HighlightCode', true);
        const fileName = `response_${Date.now()}.json`;
        return createElement(
          'div',
          null,
          createElement('h5', null, 'Response body'),
          createElement(
            highlightCode,
            { language: 'json', downloadable: true, fileName, canCopy: true },
            exact,
          ),
        );
      },
    },
  };
}
