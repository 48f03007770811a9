import type { SwaggerCustomOptions } from '@nestjs/swagger';

/**
 * Swagger UI's options at /docs. Its plugin keeps int64 ids exact: Swagger UI shows a JSON
 * body through JSON.parse, which rounds integers beyond 2^53 (swagger-api/swagger-ui#2030),
 * and a responseInterceptor runs before that parse. @nestjs/swagger writes these functions
 * into the page with `fn.toString()`, so none may refer to anything outside itself.
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
 * Renders a JSON body itself only when Swagger UI's round trip would change a number's text;
 * otherwise, and without `JSON.rawJSON`, Swagger UI's own component renders.
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
