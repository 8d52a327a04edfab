package resource

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Table converts objects of one kind to the kubectl table: NAME, the kind's Columns, AGE,
// then the kind's WideColumns (shown by -o wide).
type Table[T Object] struct {
	Columns     []metav1.TableColumnDefinition
	WideColumns []metav1.TableColumnDefinition
	// Cells returns one cell per column of Columns followed by one per column of WideColumns.
	Cells func(obj T) []any
}

var (
	nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name",
		Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
	ageColumn = metav1.TableColumnDefinition{Name: "Age", Type: "date",
		Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
)

// ConvertToTable implements rest.TableConvertor for one object or a list.
func (t Table[T]) ConvertToTable(_ context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	addRow := func(obj runtime.Object) error {
		o, ok := obj.(T)
		if !ok {
			return fmt.Errorf("cannot show %T in a table of %T", obj, *new(T))
		}
		cells := t.Cells(o)
		if len(cells) != len(t.Columns)+len(t.WideColumns) {
			return fmt.Errorf("%T: %d cells for %d columns", obj, len(cells), len(t.Columns)+len(t.WideColumns))
		}
		row := make([]any, 0, len(cells)+2)
		row = append(row, o.GetName())
		row = append(row, cells[:len(t.Columns)]...)
		row = append(row, Age(o.GetCreationTimestamp()))
		row = append(row, cells[len(t.Columns):]...)
		table.Rows = append(table.Rows, metav1.TableRow{Cells: row, Object: runtime.RawExtension{Object: obj}})
		return nil
	}

	if meta.IsListType(object) {
		if err := meta.EachListItem(object, addRow); err != nil {
			return nil, err
		}
		if list, err := meta.ListAccessor(object); err == nil {
			table.ResourceVersion = list.GetResourceVersion()
			table.Continue = list.GetContinue()
			table.RemainingItemCount = list.GetRemainingItemCount()
		}
	} else {
		if err := addRow(object); err != nil {
			return nil, err
		}
		if obj, err := meta.Accessor(object); err == nil {
			table.ResourceVersion = obj.GetResourceVersion()
		}
	}

	if opts, ok := tableOptions.(*metav1.TableOptions); !ok || !opts.NoHeaders {
		table.ColumnDefinitions = make([]metav1.TableColumnDefinition, 0, len(t.Columns)+len(t.WideColumns)+2)
		table.ColumnDefinitions = append(table.ColumnDefinitions, nameColumn)
		table.ColumnDefinitions = append(table.ColumnDefinitions, t.Columns...)
		table.ColumnDefinitions = append(table.ColumnDefinitions, ageColumn)
		for _, c := range t.WideColumns {
			c.Priority = 1
			table.ColumnDefinitions = append(table.ColumnDefinitions, c)
		}
	}
	return table, nil
}

// Age renders a creation timestamp as kubectl does (e.g. "5m").
func Age(ts metav1.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(ts.Time))
}

// Column is shorthand for a column definition.
func Column(name, typ, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: description}
}
